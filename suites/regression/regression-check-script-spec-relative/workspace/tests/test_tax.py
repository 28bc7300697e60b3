from billing.tax import vat


def test_vat():
    assert vat(1000, 0.19) == 190
