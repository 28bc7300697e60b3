from app import flags
from app.checkout import legacy, v2


def checkout(cart, user):
    if flags.enabled("new_checkout_v2", user=user):
        return v2.checkout(cart, user)
    return legacy.checkout(cart, user)


def checkout_preview(cart, user):
    if not flags.enabled("new_checkout_v2", user=user):
        return legacy.preview(cart)
    return v2.preview(cart, user)
