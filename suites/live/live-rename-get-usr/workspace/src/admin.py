from src.users import get_usr


def audit(user_id):
    return "audit:" + str(get_usr(user_id))
