from backoff import delays, total_wait


def test_first_delay_is_the_base():
    assert delays(3) == [0.5, 1.0, 2.0]


def test_delays_are_capped():
    assert delays(6, base=1, cap=8) == [1, 2, 4, 8, 8, 8]


def test_no_attempts_no_delays():
    assert delays(0) == []


def test_total_wait():
    assert total_wait(4, base=1) == 15
