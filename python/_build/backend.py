"""A PEP 517 build backend for the cuprof package, with no dependency: the
package is one pure-Python module, so a wheel is a zip of it and its
metadata. pip can then install it where no package index can be reached
(no setuptools or wheel to fetch)."""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "cuprof"
VERSION = "0.1.0"
SUMMARY = "Start and stop cuprof's capture ranges from the program, and an IPython extension (%cuprof)"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIST_INFO = "%s-%s.dist-info" % (NAME, VERSION)


def _metadata():
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: >=3.8\n"
            "License: Apache-2.0\nDescription-Content-Type: text/markdown\n\n%s" % (NAME, VERSION, SUMMARY, readme))


WHEEL = "Wheel-Version: 1.0\nGenerator: cuprof _build/backend.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    d = os.path.join(metadata_directory, DIST_INFO)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(d, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(WHEEL)
    return DIST_INFO


def _files():
    pkg = os.path.join(HERE, NAME)
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py"):
            with open(os.path.join(pkg, name), "rb") as f:
                yield "%s/%s" % (NAME, name), f.read()


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d\n" % (path, digest, len(data))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    filename = "%s-%s-py3-none-any.whl" % (NAME, VERSION)
    entries = list(_files())
    entries.append(("%s/METADATA" % DIST_INFO, _metadata().encode()))
    entries.append(("%s/WHEEL" % DIST_INFO, WHEEL.encode()))
    record = "".join(_record_line(p, d) for p, d in entries) + "%s/RECORD,,\n" % DIST_INFO
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in entries:
            z.writestr(path, data)
        z.writestr("%s/RECORD" % DIST_INFO, record)
    return filename


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (NAME, VERSION)
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as t:
        for rel in ["pyproject.toml", "README.md", "_build/backend.py"] + [p for p, _ in _files()]:
            t.add(os.path.join(HERE, rel), arcname="%s/%s" % (base, rel))
        info = tarfile.TarInfo("%s/PKG-INFO" % base)
        data = _metadata().encode()
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return filename
