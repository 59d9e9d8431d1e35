"""bench.country's results: one entry per size and set of profiles."""

from bench.country import size_key, with_entry


def test_an_entry_replaces_only_the_run_of_its_size_and_profiles():
    car_10m = {"nodes": 10_000_000, "profiles_arg": "car", "run": 1}
    old_car_1m = {"nodes": 1_000_000, "run": 1}  # before --profiles existed: the car alone
    sizes = [old_car_1m, car_10m]

    all_10m = {"nodes": 10_000_000, "profiles_arg": "car,foot,bicycle", "run": 2}
    sizes = with_entry(sizes, all_10m)
    assert sizes == [old_car_1m, car_10m, all_10m]

    new_car_1m = {"nodes": 1_000_000, "profiles_arg": "car", "run": 3}
    sizes = with_entry(sizes, new_car_1m)
    assert sizes == [new_car_1m, car_10m, all_10m]


def test_a_run_before_profiles_were_recorded_counts_as_the_car_alone():
    assert size_key({"nodes": 3}) == (3, "car")
    assert size_key({"nodes": 3, "profiles_arg": "foot"}) == (3, "foot")
