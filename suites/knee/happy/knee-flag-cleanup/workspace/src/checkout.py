from flags import enabled


def checkout(cart):
    if enabled('new_checkout'):
        return new_flow(cart)
    return old_flow(cart)
