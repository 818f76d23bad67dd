"""Reading what a user names: regular files only, bounded reads, confined paths, strict JSON.

Four rules that every reader and every declaration applies, each stated once here
(:doc:`reliability`, *Inputs stay inside what you named*):

* **Regular files only.** A FIFO, a device, a socket or a directory named where a
  file is read is refused *before* a byte is read: :func:`open_regular` opens
  without blocking and asks the open descriptor what it is (no race with a file
  swapped in after a ``stat``). A FIFO would block forever; ``/dev/zero`` named
  ``x.json`` would be read until memory ran out.
* **Bounded.** :func:`read_bounded` reads at most ``limit`` bytes and refuses a
  larger file; :func:`read_lines` caps the length of a line and the number of
  lines, so a declaration's size is bounded by what it can legitimately hold.
* **Confined.** A path read from *inside* a data set or a declaration (a saved
  dataset's ``state.json`` file names, an MDS ``index.json`` basename, a
  manifest's shard paths, a funnel's outcome files) is resolved — symlinks and
  ``..`` included — and must stay inside the directory the user named
  (:func:`confined`); an absolute path is refused too. The message names the
  file and the key that held the path.
* **Strict JSON.** :func:`load_json` turns every way a JSON text can fail —
  bad syntax, nesting past Python's recursion limit, an integer of more digits
  than Python converts — into an :class:`~packing_theory.errors.InputError`
  naming the file; ``unique_keys=True`` (declarations) refuses an object that
  repeats a key, which JSON parsers otherwise resolve silently (the last wins).
  :func:`check_tree` bounds a parsed declaration's nesting and how far YAML
  aliases expand it (a "billion laughs" document of 1 KB expands to 10**9
  leaves).

>>> import json, os, tempfile
>>> d = tempfile.mkdtemp()
>>> confined(d, "a/b.arrow", what="state.json _data_files[0].filename") == os.path.join(d, "a/b.arrow")
True
>>> confined(d, "../x.arrow", what="state.json _data_files[0].filename")  # doctest: +ELLIPSIS
Traceback (most recent call last):
packing_theory.InputError: state.json _data_files[0].filename '../x.arrow' leaves the directory ...
>>> load_json('{"a": 1, "a": 2}', "mixture 'm.json'", unique_keys=True)
Traceback (most recent call last):
packing_theory.InputError: mixture 'm.json' repeats the key 'a' in one object (JSON keeps only the last)
>>> load_json("[" * 100000, "line 3 of 'x.jsonl'")  # doctest: +ELLIPSIS
Traceback (most recent call last):
packing_theory.InputError: line 3 of 'x.jsonl' is not valid JSON: nested too deeply ...
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
from collections.abc import Iterator
from typing import IO, Any

from .errors import InputError, import_optional

__all__ = [
    "DECLARATION_LIMIT",
    "MAX_ALIAS_EXPANSION",
    "MAX_DEPTH",
    "MissingFile",
    "check_tree",
    "confined",
    "load_json",
    "load_yaml",
    "open_regular",
    "outside",
    "read_bounded",
    "read_json",
    "read_lines",
    "regular_file",
]

DECLARATION_LIMIT = 64 << 20
"""The largest declaration file read (64 MiB): a mixture, a funnel, a loader state."""

MAX_DEPTH = 64
"""How deeply a declaration may nest objects and lists."""

MAX_ALIAS_EXPANSION = 10_000
"""How many entries YAML aliases may add to a declaration when expanded (a 1 KB "billion laughs"
document expands to 10**9 leaves; a repeated parameter block adds a few)."""

_CHUNK = 1 << 20


class MissingFile(FileNotFoundError):
    """A path that does not exist: ``str`` names the option or role and the path, while ``errno``,
    ``strerror`` and ``filename`` are the system's (``No such file or directory``), so that a caller
    that names the option itself reads the plain reason."""

    named = ""

    def __str__(self) -> str:
        return self.named or super().__str__()


def _missing(what: str, name: str) -> MissingFile:
    exc = MissingFile(errno.ENOENT, os.strerror(errno.ENOENT), name)
    exc.named = f"{what} {name!r} does not exist"
    return exc


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory, not a file"
    if stat.S_ISFIFO(mode):
        return "not a regular file (a pipe: reading it could wait forever)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "not a regular file (a device: reading it may never end)"
    if stat.S_ISSOCK(mode):
        return "not a regular file (a socket)"
    return "not a regular file"


def regular_file(path: str | os.PathLike[str], what: str) -> str:
    """``path`` as a string after checking, without opening it, that it is a regular file.

    Symlinks are followed (a link to a regular file is one). ``what`` names the
    option or the role (``"--labels"``, ``"funnel stage 'dedup' ids"``).

    Raises:
        FileNotFoundError: no such path (naming ``what``).
        InputError: a directory, a FIFO, a device or a socket.

    >>> regular_file("/dev/null", "--labels")
    Traceback (most recent call last):
    packing_theory.InputError: --labels '/dev/null' is not a regular file (a device: reading it may never end)
    """
    name = os.fspath(path)
    try:
        st = os.stat(name)
    except FileNotFoundError:
        raise _missing(what, name) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{what} {name!r} is {_kind(st.st_mode)}")
    return name


def open_regular(path: str | os.PathLike[str], what: str) -> IO[bytes]:
    """Open ``path`` for reading in binary, refusing anything but a regular file before reading.

    The file is opened with ``O_NONBLOCK`` (opening a FIFO does not wait for a
    writer) and the open descriptor is ``fstat``-ed, so a path swapped for a
    FIFO after a check is refused too.

    Raises:
        FileNotFoundError: no such path.
        InputError: not a regular file (naming ``what``).
    """
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise _missing(what, name) from None
    except IsADirectoryError:
        raise InputError(f"{what} {name!r} is a directory, not a file") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(f"{what} {name!r} is {_kind(mode)}")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: str | os.PathLike[str], what: str, limit: int = DECLARATION_LIMIT) -> bytes:
    """The bytes of the regular file ``path``, refusing one larger than ``limit`` bytes.

    Reads at most ``limit + 1`` bytes whatever the file claims. O(limit) memory.

    Raises:
        FileNotFoundError: no such path.
        InputError: not a regular file, or larger than ``limit`` (naming ``what`` and the limit).
    """
    with open_regular(path, what) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"{what} {os.fspath(path)!r} is larger than {limit:,} bytes, the most it may be")
    return data


def read_lines(path: str | os.PathLike[str], what: str, *, max_line: int,
               max_lines: int | None = None) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a UTF-8 text file, line endings removed, read in 1 MiB chunks.

    A line longer than ``max_line`` characters, or more than ``max_lines`` lines
    (blank ones included), is refused as soon as it is met: memory is the lines
    the caller keeps, never a file's worth of one line.

    Raises:
        FileNotFoundError: no such path.
        InputError: not a regular file, not UTF-8, a line or a line count over its bound.
    """
    name = os.fspath(path)
    with open_regular(name, what) as raw:
        text = _utf8(raw, name, what)
        for number, line in enumerate(_split_lines(text, name, what, max_line), 1):
            if max_lines is not None and number > max_lines:
                raise InputError(f"{what} {name!r} has more than {max_lines:,} lines, the most it may hold")
            yield number, line


def _utf8(raw: IO[bytes], name: str, what: str) -> Iterator[str]:
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    while True:
        chunk = raw.read(_CHUNK)
        try:
            yield decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as exc:
            raise InputError(f"{what} {name!r} is not UTF-8 text (byte {offset + exc.start:,})") from None
        if not chunk:
            return
        offset += len(chunk)


def _split_lines(chunks: Iterator[str], name: str, what: str, max_line: int) -> Iterator[str]:
    pending = ""
    for chunk in chunks:
        pending += chunk
        *lines, pending = pending.split("\n")
        for line in lines:
            yield _bounded_line(line.removesuffix("\r"), name, what, max_line)
        _bounded_line(pending, name, what, max_line)
    if pending:
        yield _bounded_line(pending.removesuffix("\r"), name, what, max_line)


def _bounded_line(line: str, name: str, what: str, max_line: int) -> str:
    if len(line) > max_line:
        raise InputError(f"{what} {name!r} has a line longer than {max_line:,} characters")
    return line


def outside(root: str | os.PathLike[str], name: str) -> str | None:
    """Why the path ``name``, read from a file of the directory ``root``, leaves it (``None``: it stays).

    ``name`` is resolved against ``root`` with symlinks followed; an absolute
    path, an empty one or one holding a NUL byte never stays.

    >>> outside("/data/set", "part-0.arrow") is None
    True
    >>> outside("/data/set", "/etc/passwd")
    'is an absolute path'
    """
    if not isinstance(name, str) or not name or "\x00" in name:
        return "is not a relative file name"
    if os.path.isabs(name):
        return "is an absolute path"
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, name))
    if real != real_root and os.path.commonpath([real_root, real]) == real_root:
        return None
    return f"resolves to {real!r}"


def confined(root: str | os.PathLike[str], name: object, *, what: str) -> str:
    """``root/name`` after checking that ``name`` stays inside ``root`` (see :func:`outside`).

    ``what`` names the file and the key that held ``name`` (``"Hugging Face dataset
    'd': state.json _data_files[0].filename"``). The path is returned as
    ``os.path.join(root, name)``, unresolved, so that reports keep naming it as
    the data set does.

    Raises:
        InputError: ``name`` is not a string, is absolute, or resolves outside ``root``.
    """
    root_name = os.fspath(root)
    if not isinstance(name, str):
        raise InputError(f"{what} must be a file name, got {type(name).__name__} {name!r}")
    reason = outside(root_name, name)
    if reason is not None:
        raise InputError(f"{what} {name!r} leaves the directory {root_name!r} ({reason}); a path inside a "
                         "data set or declaration must stay inside the directory you named")
    return os.path.join(root_name, name)


def _unique_pairs(what: str) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise InputError(f"{what} repeats the key {key!r} in one object (JSON keeps only the last)")
            out[key] = value
        return out

    return hook


def load_json(text: str | bytes, what: str, *, unique_keys: bool = False) -> Any:
    """Parse JSON, every failure an :class:`~packing_theory.errors.InputError` naming ``what``.

    ``unique_keys=True`` refuses an object that repeats a key. Nesting deeper
    than Python's recursion limit and integers longer than Python converts
    (``sys.set_int_max_str_digits``) are refused like bad syntax.
    """
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs(what) if unique_keys else None)
    except RecursionError:
        raise InputError(f"{what} is not valid JSON: nested too deeply (past Python's recursion limit)"
                         ) from None
    except InputError:
        raise
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} is not UTF-8 text (byte {exc.start:,})") from None
    except ValueError as exc:  # JSONDecodeError, and an integer of too many digits
        raise InputError(f"{what} is not valid JSON: {' '.join(str(exc).split())[:200]}") from None


def read_json(path: str | os.PathLike[str], what: str, *, limit: int = DECLARATION_LIMIT,
              unique_keys: bool = False) -> Any:
    """:func:`load_json` of :func:`read_bounded`: a regular file of at most ``limit`` bytes, parsed strictly.

    Messages name ``what`` and the file (``"MDS index 'd/index.json' is not valid JSON: ..."``).
    """
    return load_json(read_bounded(path, what, limit), f"{what} {os.fspath(path)!r}", unique_keys=unique_keys)


def load_yaml(text: str, what: str) -> Any:
    """Parse YAML safely: PyYAML's safe loader, refusing a mapping that repeats a key.

    The result should go through :func:`check_tree` before it is copied or
    serialised (aliases share nodes; expanding them is what costs).

    Raises:
        InputError: not valid YAML, a repeated key, nesting past the recursion limit (naming ``what``).
        MissingDependency: PyYAML is not installed.
    """
    yaml = import_optional("yaml", extra="yaml", purpose=f"reading the YAML {what}")

    class UniqueKeyLoader(yaml.SafeLoader):  # type: ignore[misc,name-defined]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    repeated = key in seen
                except TypeError:  # an unhashable key: the base loader says so
                    break
                if repeated:
                    raise InputError(f"{what} repeats the key {key!r} in one mapping (YAML keeps only the "
                                     f"last), line {key_node.start_mark.line + 1}")
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # a SafeLoader subclass
    except RecursionError:
        raise InputError(f"{what} is not valid YAML: nested too deeply (past Python's recursion limit)"
                         ) from None
    except yaml.YAMLError as exc:
        raise InputError(f"{what} is not valid YAML: {' '.join(str(exc).split())[:300]}") from None


def check_tree(doc: Any, what: str, *, max_depth: int = MAX_DEPTH,
               max_expansion: int = MAX_ALIAS_EXPANSION) -> None:
    """Refuse a parsed declaration nested deeper than ``max_depth``, or whose shared nodes (YAML aliases)
    expand it by more than ``max_expansion`` entries.

    An entry is a list item or a mapping value. The expanded size is computed
    once per shared node (O(distinct nodes)), never by expanding; a cyclic
    document (``&a [*a]``) is infinitely deep and refused as such.

    >>> laugh = ["x"] * 10
    >>> for _ in range(8):
    ...     laugh = [laugh] * 10
    >>> check_tree({"p": laugh}, "funnel 'f.yaml'")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    packing_theory.InputError: funnel 'f.yaml' expands to 1,111,111,111 entries through shared nodes ...
    """
    sizes: dict[int, int] = {}
    distinct = 0

    def size(node: Any, depth: int) -> int:
        nonlocal distinct
        if not isinstance(node, (dict, list)):
            return 0
        if depth > max_depth:
            raise InputError(f"{what} nests deeper than {max_depth} levels (or refers to itself)")
        key = id(node)
        if key in sizes:
            return sizes[key]
        children = node.values() if isinstance(node, dict) else node
        total = 0
        for child in children:
            total += 1 + size(child, depth + 1)
        sizes[key] = total
        distinct += len(node)
        return total

    expanded = size(doc, 0)
    if expanded - distinct > max_expansion:
        raise InputError(f"{what} expands to {expanded:,} entries through shared nodes (YAML aliases), "
                         f"{expanded - distinct:,} more than it holds; at most {max_expansion:,} more are "
                         "allowed")
