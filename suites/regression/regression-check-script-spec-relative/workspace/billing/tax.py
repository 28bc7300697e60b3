def vat(net, rate):
    return round(net * rate)


def reverse_charge(country, b2b):
    return b2b and country != 'DE'


def oss_threshold_exceeded(eu_sales_eur):
    return eu_sales_eur > 10000
