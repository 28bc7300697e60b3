NEW_CHECKOUT = flag('new_checkout')
