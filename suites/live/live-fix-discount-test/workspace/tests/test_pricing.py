from src.pricing import apply_discount


def test_ten_percent_off():
    assert apply_discount(200, 10) == 180
