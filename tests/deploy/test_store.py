"""The dataset store: publish, pull with checksums, atomic switch, follow; a directory store, the
same code through fsspec URLs, and S3 against a real local S3 server (moto's server mode)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine import layout
from engine.dataset import DatasetRegistry
from engine.store import LATEST, PUBLISHED, DatasetStore, StoreError, local_version
from engine.store_follower import StoreFollower
from tests.deploy.versions import copy_region, derive_version
from tests.fixtures_live import free_port

REGION = "helsinki"


@pytest.fixture()
def source(data_dir, tmp_path) -> Path:
    """A DATA_DIR of its own holding the imported Helsinki sample (tests add versions to it)."""
    root = tmp_path / "source"
    copy_region(data_dir, REGION, root)
    return root


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_publish_then_pull_gives_the_same_files_and_moves_current(source, tmp_path):
    store = DatasetStore(str(tmp_path / "store"))
    published = store.publish(layout.current_link(source, REGION).resolve())
    assert published.uploaded and published.files > 10
    assert store.latest(REGION) == published.version
    assert store.regions() == [REGION] and store.versions(REGION) == [published.version]

    node = tmp_path / "node"
    pulled = store.pull(REGION, node)
    assert pulled.pulled and pulled.version == published.version and pulled.bytes == published.bytes
    assert local_version(node, REGION) == published.version
    assert tree(layout.current_link(node, REGION).resolve()) == tree(layout.current_link(source, REGION).resolve())
    assert DatasetRegistry(node).get(REGION).version == published.version
    # nothing left behind but the version and the lock
    assert sorted(p.name for p in layout.versions_dir(node, REGION).iterdir()) == [published.version]

    again = store.publish(layout.current_link(source, REGION).resolve())
    assert not again.uploaded
    assert not store.pull(REGION, node).pulled


def test_files_of_equal_content_are_pulled_once_and_linked(data_dir, tmp_path, monkeypatch):
    """The import stores equal files once (hard links); a node that pulls the version gets the
    same links, each content fetched from the store once."""
    version_dir = layout.current_link(data_dir, REGION).resolve()
    store = DatasetStore(str(tmp_path / "store"))
    published = store.publish(version_dir)
    fetched: list[str] = []
    download = store._download_file

    def counting_download(remote, local, entry):
        fetched.append(entry.path)
        download(remote, local, entry)

    monkeypatch.setattr(store, "_download_file", counting_download)
    node = tmp_path / "node"
    store.pull(REGION, node)
    pulled = layout.current_link(node, REGION).resolve()

    def inodes_by_path(root: Path) -> dict[str, int]:
        return {p.relative_to(root).as_posix(): p.stat().st_ino for p in root.rglob("*") if p.is_file()}

    def same_file_groups(root: Path) -> set[frozenset[str]]:
        groups: dict[int, set[str]] = {}
        for path, inode in inodes_by_path(root).items():
            groups.setdefault(inode, set()).add(path)
        return {frozenset(g) for g in groups.values()}

    assert same_file_groups(pulled) == same_file_groups(version_dir)
    assert any(len(group) > 1 for group in same_file_groups(pulled))
    assert len(fetched) == len(same_file_groups(version_dir)) < published.files
    assert tree(pulled) == tree(version_dir)


def test_published_index_lists_every_file_with_its_checksum(source, tmp_path):
    store = DatasetStore(str(tmp_path / "store"))
    result = store.publish(layout.current_link(source, REGION).resolve())
    index = json.loads((tmp_path / "store" / REGION / "versions" / result.version / PUBLISHED).read_text())
    version_dir = layout.current_link(source, REGION).resolve()
    listed = {f["path"]: f for f in index["files"]}
    assert set(listed) == set(tree(version_dir))
    import hashlib

    for path, entry in listed.items():
        data = (version_dir / path).read_bytes()
        assert entry["bytes"] == len(data) and entry["sha256"] == hashlib.sha256(data).hexdigest()


def test_a_corrupt_file_in_the_store_is_refused_and_the_served_version_stays(source, tmp_path):
    store = DatasetStore(str(tmp_path / "store"))
    v1 = store.publish(layout.current_link(source, REGION).resolve()).version
    node = tmp_path / "node"
    store.pull(REGION, node)

    v2 = derive_version(source, REGION, "2")
    store.publish(layout.current_link(source, REGION).resolve())
    victim = tmp_path / "store" / REGION / "versions" / v2 / layout.SEARCH_DB
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, one byte flipped
    victim.write_bytes(bytes(data))

    with pytest.raises(StoreError, match=f"checksum mismatch for {layout.SEARCH_DB}"):
        store.pull(REGION, node)
    assert local_version(node, REGION) == v1
    assert sorted(p.name for p in layout.versions_dir(node, REGION).iterdir()) == [v1]  # no staging left

    victim.write_bytes(bytes(data) + b"tail")  # a longer file is refused as well
    with pytest.raises(StoreError, match="checksum mismatch"):
        store.pull(REGION, node)
    victim.unlink()
    with pytest.raises(StoreError, match="missing from the store"):
        store.pull(REGION, node)
    assert local_version(node, REGION) == v1


@pytest.mark.parametrize("bad_path", ["../escape.txt", "/etc/passwd", "graph/../../x", "a//b", "./manifest.json"])
def test_a_published_index_cannot_write_outside_the_version(source, tmp_path, bad_path):
    store = DatasetStore(str(tmp_path / "store"))
    version = store.publish(layout.current_link(source, REGION).resolve()).version
    index_path = tmp_path / "store" / REGION / "versions" / version / PUBLISHED
    index = json.loads(index_path.read_text())
    index["files"].append({"path": bad_path, "bytes": 1, "sha256": "0" * 64})
    index_path.write_text(json.dumps(index))
    with pytest.raises(StoreError, match="invalid file path"):
        store.pull(REGION, tmp_path / "node")
    assert not (tmp_path / "escape.txt").exists()
    assert local_version(tmp_path / "node", REGION) is None


def test_latest_naming_an_incomplete_upload_or_a_bad_name_is_refused(source, tmp_path):
    store = DatasetStore(str(tmp_path / "store"))
    version = store.publish(layout.current_link(source, REGION).resolve()).version
    (tmp_path / "store" / REGION / "versions" / version / PUBLISHED).unlink()  # upload not finished
    with pytest.raises(StoreError, match="not completely published"):
        store.pull(REGION, tmp_path / "node")
    with pytest.raises(StoreError, match="not completely published"):
        store.promote(REGION, version)
    (tmp_path / "store" / REGION / LATEST).write_text(json.dumps({"version": "../../etc"}))
    with pytest.raises(StoreError, match="invalid version name"):
        store.pull(REGION, tmp_path / "node")
    with pytest.raises(StoreError, match="nothing published"):
        store.pull("nowhere", tmp_path / "node")


def test_a_version_of_another_format_is_not_pulled(source, tmp_path):
    version_dir = layout.current_link(source, REGION).resolve()
    store = DatasetStore(str(tmp_path / "store"))
    version = store.publish(version_dir).version
    # the store's copy claims another format, and its index agrees (a consistent but foreign upload)
    stored = tmp_path / "store" / REGION / "versions" / version
    manifest = json.loads((stored / layout.MANIFEST).read_text())
    manifest["format_version"] = layout.FORMAT_VERSION + 1
    (stored / layout.MANIFEST).write_text(json.dumps(manifest))
    index = json.loads((stored / PUBLISHED).read_text())
    import hashlib

    for entry in index["files"]:
        if entry["path"] == layout.MANIFEST:
            entry["bytes"] = (stored / layout.MANIFEST).stat().st_size
            entry["sha256"] = hashlib.sha256((stored / layout.MANIFEST).read_bytes()).hexdigest()
    (stored / PUBLISHED).write_text(json.dumps(index))
    with pytest.raises(StoreError, match="format version"):
        store.pull(REGION, tmp_path / "node")
    assert not layout.versions_dir(tmp_path / "node", REGION).exists() or not any(
        layout.versions_dir(tmp_path / "node", REGION).iterdir()
    )


def test_roll_forward_prune_and_roll_back(source, tmp_path):
    store = DatasetStore(f"file://{tmp_path / 'store'}")  # the same code through an fsspec URL
    node = tmp_path / "node"
    v1 = store.publish(layout.current_link(source, REGION).resolve()).version
    store.pull(REGION, node)
    v2 = derive_version(source, REGION, "2")
    store.publish(layout.current_link(source, REGION).resolve())
    v3 = derive_version(source, REGION, "3")
    store.publish(layout.current_link(source, REGION).resolve())
    assert store.versions(REGION) == [v1, v2, v3]
    store.pull(REGION, node, v2)
    assert local_version(node, REGION) == v2
    store.pull(REGION, node)
    assert local_version(node, REGION) == v3
    assert sorted(p.name for p in layout.versions_dir(node, REGION).iterdir()) == [v2, v3]  # two kept

    store.promote(REGION, v1)  # roll back: v1 is pulled again, verified
    assert store.latest(REGION) == v1
    store.pull(REGION, node)
    assert local_version(node, REGION) == v1
    assert DatasetRegistry(node).get(REGION).version == v1


def test_follower_pulls_new_versions_and_reports_each_change(source, tmp_path):
    store_dir = tmp_path / "store"
    publisher = DatasetStore(str(store_dir))
    node = tmp_path / "node"
    changes: list[str | None] = []
    follower = StoreFollower(
        DatasetStore(str(store_dir)), node, 60.0, lambda: changes.append(local_version(node, REGION))
    )
    assert follower.poll_once() == [] and changes == []  # empty store: nothing to do

    v1 = publisher.publish(layout.current_link(source, REGION).resolve()).version
    assert [r.version for r in follower.poll_once()] == [v1] and changes == [v1]
    assert follower.poll_once() == [] and changes == [v1]  # unchanged: no call

    v2 = derive_version(source, REGION, "2")
    publisher.publish(layout.current_link(source, REGION).resolve(), promote=False)
    assert follower.poll_once() == []  # uploaded, not promoted: nodes stay
    publisher.promote(REGION, v2)
    registry = DatasetRegistry(node)
    follower.on_change = registry.reload
    follower.poll_once()
    assert registry.get(REGION).version == v2

    # a second follower on the same DATA_DIR (another process of the node) sees the move too
    other: list[str] = []
    second = StoreFollower(DatasetStore(str(store_dir)), node, 60.0, lambda: other.append("changed"))
    v3 = derive_version(source, REGION, "3")
    publisher.publish(layout.current_link(source, REGION).resolve())
    follower.poll_once()
    second.poll_once()
    assert other == ["changed"] and local_version(node, REGION) == v3


def test_follower_thread_converges_within_its_interval(source, tmp_path):
    store_dir = tmp_path / "store"
    publisher = DatasetStore(str(store_dir))
    node = tmp_path / "node"
    follower = StoreFollower(DatasetStore(str(store_dir)), node, 0.5).start()
    try:
        v1 = publisher.publish(layout.current_link(source, REGION).resolve()).version
        t0 = time.monotonic()
        while local_version(node, REGION) != v1 and time.monotonic() - t0 < 30:
            time.sleep(0.05)
        assert local_version(node, REGION) == v1
        # one interval (+ jitter) plus the pull of 2.5 MB, with room for a busy shared machine
        assert time.monotonic() - t0 < 0.5 * 1.1 + 5.0
    finally:
        follower.stop()


def test_cli_publish_pull_list_and_errors(source, tmp_path, monkeypatch):
    from cli.main import main

    runner = CliRunner()
    store = str(tmp_path / "store")
    monkeypatch.setenv("DATA_DIR", str(source))
    out = runner.invoke(main, ["dataset", "publish", REGION, "--to", store])
    assert out.exit_code == 0, out.output
    assert "uploaded" in out.output

    monkeypatch.setenv("DATA_DIR", str(tmp_path / "node"))
    out = runner.invoke(main, ["dataset", "pull", REGION, "--from", store])
    assert out.exit_code == 0 and "pulled and current" in out.output, out.output
    out = runner.invoke(main, ["dataset", "list", "--from", store])
    assert json.loads(out.output)[0]["region"] == REGION

    out = runner.invoke(main, ["dataset", "pull", "atlantis", "--from", store])
    assert out.exit_code != 0 and "nothing published for region 'atlantis'" in out.output
    out = runner.invoke(main, ["dataset", "pull", "../x", "--from", store])
    assert out.exit_code != 0 and "invalid region name" in out.output
    out = runner.invoke(main, ["dataset", "publish", "atlantis", "--to", store])
    assert out.exit_code != 0 and "no imported region 'atlantis'" in out.output
    monkeypatch.delenv("DATASET_STORE", raising=False)
    out = runner.invoke(main, ["dataset", "pull", REGION])
    assert out.exit_code != 0 and "DATASET_STORE" in out.output


# ------------------------------------------------------------------------------------------ S3
@pytest.fixture(scope="module")
def s3_endpoint(tmp_path_factory):
    """moto's server mode: a real HTTP server speaking the S3 protocol, on loopback."""
    pytest.importorskip("moto.server", reason="moto[server] is a test dependency (pyproject [test])")
    pytest.importorskip("s3fs")
    port = free_port()
    log = open(tmp_path_factory.mktemp("moto") / "moto.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    try:
        from tests.fixtures_live import wait_http

        wait_http(url + "/moto-api/", timeout=30, proc=proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def test_s3_store_publish_and_pull(source, tmp_path, s3_endpoint, monkeypatch):
    import s3fs

    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    options = {"endpoint_url": s3_endpoint, "skip_instance_cache": True}
    s3fs.S3FileSystem(**options).mkdir("meridian-datasets")
    store = DatasetStore("s3://meridian-datasets/prod", **options)
    published = store.publish(layout.current_link(source, REGION).resolve())
    assert published.uploaded and store.latest(REGION) == published.version
    assert store.regions() == [REGION]

    node = tmp_path / "node"
    follower = StoreFollower(DatasetStore("s3://meridian-datasets/prod", **options), node, 60.0)
    assert [r.version for r in follower.poll_once()] == [published.version]
    assert tree(layout.current_link(node, REGION).resolve()) == tree(layout.current_link(source, REGION).resolve())

    v2 = derive_version(source, REGION, "2")
    store.publish(layout.current_link(source, REGION).resolve())
    follower.poll_once()
    assert local_version(node, REGION) == v2

    s3fs.S3FileSystem(**options).pipe_file(f"meridian-datasets/prod/{REGION}/versions/{v2}/{layout.ADMIN_DB}", b"x")
    with pytest.raises(StoreError, match="checksum mismatch"):
        store.pull(REGION, tmp_path / "node2")
    shutil.rmtree(tmp_path / "node2", ignore_errors=True)
