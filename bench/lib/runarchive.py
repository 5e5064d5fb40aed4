"""One benchmark run, as the tree keeps it: a folder under bench/*/results/
holding exactly

  raw.tar.xz   every file the run wrote (JSON per process, logs, its own
               tables and env.json when it wrote them), paths relative to
               the run's folder: what the summary tools read
  tables.md    the tables and findings of the run (what its summary tool
               printed, and what was concluded from it), for reading
  env.json     the machine and software it ran on (the run's own, or what
               it recorded of them in another form)

The summary tools (bench/suite/tables.py, bench/python/summarize.py) take
such a folder, or a plain folder a run has just written, through opened():
an archived run is unpacked into a private temporary folder of the run's
own name for as long as the tool reads it.

  python3 bench/lib/runarchive.py pack RUN_DIR      raw files -> raw.tar.xz
  python3 bench/lib/runarchive.py unpack RUN_DIR DEST
  python3 bench/lib/runarchive.py check RESULTS_ROOT...   the layout above

pack is reproducible (members sorted, owner, group and times zeroed), so
packing the same files twice gives the same bytes. It refuses scripts
(*.sh, *.py, *.c): what a run needs lives in bench/ and is tested there.
"""

import contextlib
import io
import os
import shutil
import sys
import tarfile
import tempfile

ARCHIVE = "raw.tar.xz"
KEPT = ("tables.md", "env.json")
LAYOUT = {ARCHIVE, *KEPT}
SCRIPT_SUFFIXES = (".sh", ".py", ".c")


class RunError(Exception):
    """A run folder or archive that is not in the layout above."""


def is_archived(run_dir):
    return os.path.isfile(os.path.join(run_dir, ARCHIVE))


def raw_files(run_dir):
    """The files of run_dir that go into the archive, sorted, relative."""
    out = []
    for root, dirs, files in os.walk(run_dir):
        dirs.sort()
        for name in files:
            out.append(os.path.relpath(os.path.join(root, name), run_dir))
    return sorted(out)


def pack(run_dir):
    """Moves every file of run_dir into run_dir/raw.tar.xz, but for copies
    of its tables.md and env.json left beside it; it returns how many files
    were packed."""
    if is_archived(run_dir):
        raise RunError(f"{run_dir}: already has {ARCHIVE}: unpack it first to add files")
    files = raw_files(run_dir)
    scripts = [f for f in files if f.endswith(SCRIPT_SUFFIXES)]
    if scripts:
        raise RunError(f"{run_dir}: scripts in a run's results ({', '.join(scripts)}): move them into bench/ "
                       "as tested tools or delete them")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:xz", format=tarfile.PAX_FORMAT) as tar:
        for rel in files:
            path = os.path.join(run_dir, rel)
            if os.path.islink(path) or not os.path.isfile(path):
                raise RunError(f"{path}: not a regular file: a run's raw files are plain files")
            info = tarfile.TarInfo(rel.replace(os.sep, "/"))
            info.size = os.path.getsize(path)
            info.mode = 0o644
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with open(path, "rb") as f:
                tar.addfile(info, f)
    with open(os.path.join(run_dir, ARCHIVE), "wb") as f:
        f.write(buf.getvalue())
    for rel in files:
        if rel not in KEPT:
            os.remove(os.path.join(run_dir, rel))
    for root, dirs, _ in os.walk(run_dir, topdown=False):
        for d in dirs:
            p = os.path.join(root, d)
            if not os.listdir(p):
                os.rmdir(p)
    return len(files)


def _safe_members(tar, where):
    for m in tar.getmembers():
        name = m.name
        parts = name.split("/")
        if name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
            raise RunError(f"{where}: member {name!r} is not a plain relative file: refusing to unpack it")
        yield m


def unpack(run_dir, dest):
    """Writes the files of archived run_dir's raw.tar.xz into dest (created
    0700 when absent): the run as it wrote them."""
    arch = os.path.join(run_dir, ARCHIVE)
    if not os.path.isfile(arch):
        raise RunError(f"{run_dir}: no {ARCHIVE}: not an archived run")
    os.makedirs(dest, mode=0o700, exist_ok=True)
    with tarfile.open(arch, mode="r:xz") as tar:
        for m in _safe_members(tar, arch):
            target = os.path.join(dest, *m.name.split("/"))
            if m.isdir():
                os.makedirs(target, mode=0o700, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
            src = tar.extractfile(m)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(src, out)


@contextlib.contextmanager
def opened(run_dir):
    """Yields a folder with run_dir's raw files: run_dir itself when it is
    not archived, else a temporary copy named like it, removed afterwards."""
    if not is_archived(run_dir):
        yield run_dir
        return
    tmp = tempfile.mkdtemp(prefix="cuprof-run-")
    try:
        dest = os.path.join(tmp, os.path.basename(os.path.abspath(run_dir)))
        unpack(run_dir, dest)
        yield dest
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check(results_root):
    """Returns the problems of every run folder under results_root (empty
    when each holds exactly the layout, with no script in its archive)."""
    problems = []
    for name in sorted(os.listdir(results_root)):
        run = os.path.join(results_root, name)
        if not os.path.isdir(run):
            if name != "README.md":
                problems.append(f"{run}: a file beside the runs (only README.md belongs there)")
            continue
        have = set(os.listdir(run))
        if have != LAYOUT:
            extra, missing = sorted(have - LAYOUT), sorted(LAYOUT - have)
            problems.append(f"{run}: holds {sorted(have)}: want exactly {sorted(LAYOUT)}"
                            + (f" (extra {extra})" if extra else "") + (f" (missing {missing})" if missing else ""))
            continue
        try:
            with tarfile.open(os.path.join(run, ARCHIVE), mode="r:xz") as tar:
                for m in _safe_members(tar, run):
                    if m.name.endswith(SCRIPT_SUFFIXES):
                        problems.append(f"{run}: script {m.name} inside the archive")
        except (tarfile.TarError, RunError, OSError) as e:
            problems.append(f"{run}: {e}")
    return problems


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    usage = "usage: runarchive.py pack RUN_DIR | unpack RUN_DIR DEST | check RESULTS_ROOT..."
    if not argv:
        print(usage, file=sys.stderr)
        return 2
    try:
        if argv[0] == "pack" and len(argv) == 2:
            print(f"{argv[1]}: {pack(argv[1])} files into {ARCHIVE}")
            return 0
        if argv[0] == "unpack" and len(argv) == 3:
            unpack(argv[1], argv[2])
            return 0
        if argv[0] == "check" and len(argv) >= 2:
            problems = [p for root in argv[1:] for p in check(root)]
            for p in problems:
                print(p, file=sys.stderr)
            return 1 if problems else 0
    except RunError as e:
        print(f"runarchive.py: {e}", file=sys.stderr)
        return 1
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
