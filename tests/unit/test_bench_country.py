"""bench.country's results: one entry per size and set of profiles."""

import mmap
import os
import resource

import pytest

from bench import page_cache
from bench.country import route_profiles, size_key, with_entry
from bench.procfs import machine_major_faults, major_faults
from bench.report import _other_profiles_ms, _paging, _stages_peak


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


def test_the_report_shows_the_walkers_and_cyclists_routes_of_both_passes_where_measured():
    first = {"route": {"p50": 9.0, "p95": 12.0}, "route_foot": {"p50": 20.0, "p95": 30.0}}
    second = {"route_foot": {"p50": 15.0, "p95": 25.5}}
    assert _other_profiles_ms({"ms": first, "second_pass": {"ms": second}}) == "foot 20.00 / 30.0 then 15.00 / 25.5"
    assert _other_profiles_ms({"ms": {"route": {"p50": 9.0, "p95": 12.0}}}) == "not measured"


def test_a_process_that_reads_evicted_pages_of_a_mapped_file_counts_major_faults(tmp_path):
    path = tmp_path / "pages.bin"
    path.write_bytes(os.urandom(64 * mmap.PAGESIZE))
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())
        os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)  # out of the page cache
        before, machine_before = major_faults(os.getpid()), machine_major_faults()
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            touched = sum(mapped[i] for i in range(0, len(mapped), mmap.PAGESIZE))
    assert touched >= 0
    assert major_faults(os.getpid()) > before
    assert major_faults(os.getpid()) == resource.getrusage(resource.RUSAGE_SELF).ru_majflt
    assert machine_major_faults() > machine_before


def test_the_passes_route_the_profiles_asked_and_only_imported_ones():
    imported = ("car", "foot", "bicycle")
    assert route_profiles(imported, None) == imported
    assert route_profiles(imported, "car") == ("car",)
    with pytest.raises(SystemExit, match="truck"):
        route_profiles(imported, "car,truck")


def test_the_report_gives_each_stages_anonymous_peak_and_each_passs_paging_where_measured():
    stages = {"search": {"seconds": 10.4, "peak_rss_mb": 2048.0, "peak_anon_mb": 512.0}, "admin": {"seconds": 2.0}}
    assert _stages_peak(stages) == "search 2.0 GB (anon 512 MB) / 10 s, admin  / 2 s"
    serve = {
        "route_profiles": ["car"],
        "paging": {"web_major_faults": [1200, 34], "machine_major_faults": 5000},
        "second_pass": {"paging": {"web_major_faults": [7, 3], "machine_major_faults": 11}},
    }
    assert _paging(serve) == (
        "; routed car; pages read back from disk by the web workers, first then second pass: "
        "1,234 (5,000 machine-wide) then 10 (11 machine-wide)"
    )
    assert _paging({"ms": {}}) == ""
    serve.update(cold_cache=True, dataset_cached_mb=3072)
    assert _paging(serve).endswith("; served from an empty page cache, 3.0 GB of the dataset cached after the passes")
    serve["dataset_cached_mb_note"] = "counted per name"
    assert _paging(serve).endswith("3.0 GB of the dataset cached after the passes (counted per name)")


def test_a_cold_cache_start_finds_none_of_the_dataset_cached(tmp_path):
    (tmp_path / "version").mkdir()
    written = tmp_path / "version" / "edges.npy"
    written.write_bytes(os.urandom(4_096_000))  # dirty pages: written back before they can be dropped
    (tmp_path / "current").symlink_to(tmp_path / "version")
    os.link(written, tmp_path / "version" / "edges-copy.npy")  # a file of equal content, stored once
    assert page_cache.resident_bytes(tmp_path) == 4_096_000  # 1,000 pages, counted once for both names
    assert page_cache.evict(tmp_path) == 4_096_000  # the file once, not again through either link
    assert page_cache.resident_bytes(tmp_path) == 0
