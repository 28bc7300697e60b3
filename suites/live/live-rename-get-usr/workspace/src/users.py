USERS = {1: "ana", 2: "mei"}


def get_usr(user_id):
    return USERS.get(user_id)
