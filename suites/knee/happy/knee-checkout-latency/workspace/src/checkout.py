def checkout(cart, payments, mailer):
    charge = payments.charge(cart.total)
    mailer.send_receipt(cart.user, charge)  # synchronous: ~300ms
    return charge
