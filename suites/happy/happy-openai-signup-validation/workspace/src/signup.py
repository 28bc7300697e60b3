def signup(form, users):
    email = form["email"]
    if users.exists(email):
        raise ValueError("email already registered")
    return users.create(email=email, name=form.get("name", ""))
