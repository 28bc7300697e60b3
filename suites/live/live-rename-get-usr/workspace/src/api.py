from src.users import get_usr


def profile(user_id):
    return {"name": get_usr(user_id)}
