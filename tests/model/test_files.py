"""bitgrid.files.atomic_write: a file appears whole or not at all; an error half way (a full
disk, a failing writer) leaves the target as it was and no temporary file behind.
bitgrid.files.read_json and parse_json: every JSON file a user gives is read through them, and
no content ends as anything but the reader's one-line error naming the file (issue 39)."""

import errno
import os
import stat

import pytest

from bitgrid import files
from bitgrid.bitstream import save
from bitgrid.config import Configuration
from bitgrid.files import MAX_JSON_BYTES, atomic_write, parse_json, read_json


def _full_disk_writer(file):
    file.write(b"half of the ")
    raise OSError(errno.ENOSPC, "No space left on device")


def test_writes_bytes_text_and_writer(tmp_path):
    path = tmp_path / "out.bin"
    assert atomic_write(path, b"\x00\x01") == os.fspath(path)
    assert path.read_bytes() == b"\x00\x01"
    atomic_write(path, "grün\n")
    assert path.read_bytes() == "grün\n".encode("utf-8")
    atomic_write(path, lambda file: file.write(b"from a writer"))
    assert path.read_bytes() == b"from a writer"
    assert os.listdir(tmp_path) == ["out.bin"]


@pytest.mark.parametrize("old", [None, b"the old content"])
def test_a_writer_failing_half_way_leaves_the_target_as_it_was(tmp_path, old):
    path = tmp_path / "design.v"
    if old is not None:
        path.write_bytes(old)
    with pytest.raises(OSError) as info:
        atomic_write(path, _full_disk_writer)
    assert info.value.errno == errno.ENOSPC
    assert info.value.filename == os.fspath(path)       # named for the target, not the temp
    if old is None:
        assert not path.exists()
    else:
        assert path.read_bytes() == old
    assert sorted(os.listdir(tmp_path)) == ([] if old is None else ["design.v"])


def test_a_full_disk_at_the_flush_leaves_no_file(tmp_path, monkeypatch):
    def fsync(descriptor):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", fsync)
    path = tmp_path / "program.bgbs"
    with pytest.raises(OSError) as info:
        atomic_write(path, b"BGBS" + bytes(100))
    assert (info.value.errno, info.value.filename) == (errno.ENOSPC, os.fspath(path))
    assert os.listdir(tmp_path) == []


def test_other_writer_errors_pass_through_unchanged(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("{}")

    def broken(file):
        file.write(b"[")
        raise ValueError("not serialisable")

    with pytest.raises(ValueError, match="^not serialisable$"):
        atomic_write(path, broken)
    assert path.read_text() == "{}"
    assert os.listdir(tmp_path) == ["x.json"]


def test_missing_folder_names_the_target(tmp_path):
    path = tmp_path / "nowhere" / "out.v"
    with pytest.raises(FileNotFoundError) as info:
        atomic_write(path, "x")
    assert info.value.filename == os.fspath(path)


def test_permissions_new_file_from_umask_replaced_file_keeps_its_own(tmp_path):
    old = os.umask(0o027)
    try:
        path = tmp_path / "new.txt"
        atomic_write(path, "x")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    finally:
        os.umask(old)
    kept = tmp_path / "kept.sh"
    kept.write_text("old")
    os.chmod(kept, 0o751)
    atomic_write(kept, "new")
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o751
    assert kept.read_text() == "new"


def test_a_symbolic_link_is_followed(tmp_path):
    target, link = tmp_path / "target.v", tmp_path / "link.v"
    target.write_bytes(b"old")
    link.symlink_to(target)
    assert atomic_write(link, b"new") == os.fspath(link)
    assert link.is_symlink() and target.read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["link.v", "target.v"]


def test_a_device_is_written_into_never_replaced(tmp_path):
    """``-o /dev/null`` must not replace /dev/null by a file (as root a rename would);
    /dev/full's error is the disk's error, named for the target."""
    atomic_write("/dev/null", b"discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    with pytest.raises(OSError) as info:
        atomic_write("/dev/full", b"x" * 100000)
    assert info.value.errno == errno.ENOSPC and info.value.filename == "/dev/full"
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_fifo_is_written_into(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    import threading
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    atomic_write(fifo, b"through the pipe")
    reader.join(10)
    assert got == [b"through the pipe"] and stat.S_ISFIFO(os.stat(fifo).st_mode)


class MapError(ValueError):
    """The reader's own error, as PortMapError or DefectMapError."""


DEPTH = 100_000


@pytest.mark.parametrize("content, message", [
    (b"[" * DEPTH + b"]" * DEPTH, "{path}: nested too deeply to be a port map"),
    (b'{"a":' * DEPTH + b"1" + b"}" * DEPTH, "{path}: nested too deeply to be a port map"),
    (b'{"ports": [\xff]}', "{path}: not a JSON port map (byte 11 is not UTF-8 text)"),
    (b'{"ports": [', "{path}: not a JSON port map (Expecting value: line 1 column 12 (char "
                     "11))"),
    (b"", "{path}: not a JSON port map (Expecting value: line 1 column 1 (char 0))"),
    (b"[" + b"7" * 5000 + b"]", "{path}: not a port map: it holds a number of more digits than "
                                "Python reads"),
])
def test_read_json_refuses_bad_content_naming_the_file(tmp_path, content, message):
    path = tmp_path / "x.json"
    path.write_bytes(content)
    with pytest.raises(MapError) as info:
        read_json(path, "port map", MapError)
    assert str(info.value) == message.format(path=path)


def test_read_json_skips_a_byte_order_mark(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"ports": [1, 2]}')
    assert read_json(path, "port map", MapError) == {"ports": [1, 2]}


def test_read_json_refuses_a_program_and_a_file_too_large(tmp_path):
    program = tmp_path / "p.bgbs"
    save(program, Configuration(2, 2))
    with pytest.raises(MapError) as info:
        read_json(program, "defect map", MapError)
    assert str(info.value) == (f"{program} looks like a BGBS BitGrid program, not a defect map "
                               "(give it as the PROGRAM argument)")
    big = tmp_path / "big.json"
    big.write_bytes(b" " * MAX_JSON_BYTES + b"[]")
    with pytest.raises(MapError) as info:
        read_json(big, "port map", MapError)
    assert str(info.value) == f"{big}: larger than 16 MiB, too large to be a port map"


def test_parse_json_reads_bytes_and_text():
    assert parse_json(b'{"a": [1, 2]}', "x.json", "port map", MapError) == {"a": [1, 2]}
    assert parse_json("[[1]]", "x.json", "edge-input stream", MapError) == [[1]]
    with pytest.raises(MapError, match="^x.json: nested too deeply to be an edge-input "
                                       "stream$"):
        parse_json("[" * DEPTH, "x.json", "edge-input stream", MapError)


def test_the_one_bounded_reader(tmp_path, monkeypatch):
    """``read_bounded``: a file up to its limit is read whole; one byte more is refused by its
    size (with the advice), a FIFO by what it yields, a device at once."""
    import threading
    from bitgrid.files import read_bounded

    class Bad(ValueError):
        pass

    path = tmp_path / "x.txt"
    path.write_bytes(b"12345678")
    assert read_bounded(path, 8, "stream", Bad) == b"12345678"
    with pytest.raises(Bad) as info:
        read_bounded(path, 7, "edge-input stream", Bad, advice="split it")
    assert str(info.value) == (f"{path}: larger than 0 MiB, too large to be an edge-input "
                               "stream; split it")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "wb") as writer:
            writer.write(b"x" * 100)
    thread = threading.Thread(target=feed)
    thread.start()
    with pytest.raises(Bad, match="too large to be a CSV file$"):
        read_bounded(fifo, 10, "CSV file", Bad)
    thread.join()
    with pytest.raises(Bad, match="^/dev/zero: not a port map: this is a device or socket; "
                                  "give the path of a port map$"):
        read_bounded("/dev/zero", 10, "port map", Bad)


def test_a_key_named_twice_is_refused(tmp_path):
    """``{"N": "0x22", "N": "0x00"}``: Python's json keeps the last value silently; a BitGrid
    file that says two things is refused, naming the key (vector files, port and defect maps
    go through parse_json; edge-input streams through the same hook)."""
    from bitgrid.stimulus import StimulusError, parse_inputs

    class Bad(ValueError):
        pass

    with pytest.raises(Bad) as info:
        parse_json('{"a": {"N": 1, "N": 2}}', "f.json", "vector file", Bad)
    assert str(info.value) == "f.json: not a vector file: key 'N' appears twice in one object"
    assert parse_json('{"a": {"N": 1, "n": 2}}', "f.json", "vector file", Bad) == {
        "a": {"N": 1, "n": 2}}
    with pytest.raises(StimulusError, match="key 'N' appears twice in one object"):
        parse_inputs('[{"N": "0x1", "N": "0x0"}]', 4, 4)
