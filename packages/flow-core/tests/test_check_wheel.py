"""ci/check_wheel.py, the CI's inspection of the built wheel, on small wheels made here: a bad one must fail for
each reason it is bad, a good one must pass and retag correctly."""
import base64
import hashlib
import importlib.util
import os
import shutil
import subprocess
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
spec = importlib.util.spec_from_file_location("check_wheel", os.path.join(ROOT, "ci", "check_wheel.py"))
check_wheel = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_wheel)

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler to make the ELF files")

GOOD_METADATA = """Metadata-Version: 2.4
Name: flow-core
Version: 0.1.0
Summary: a test
Author: The flow developers
License-Expression: Apache-2.0
License-File: LICENSE
Keywords: a,b
Classifier: Programming Language :: Python :: 3
Requires-Python: >=3.9
Description-Content-Type: text/markdown

# readme
"""


def _so(tmp_path, name, *link):
    src = tmp_path / "f.c"
    # memcpy with a run-time size needs memcpy@GLIBC_2.14 on x86-64
    src.write_text("#include <string.h>\nvoid f(char* d, const char* s, unsigned long n) { memcpy(d, s, n); }\n")
    out = tmp_path / name
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", str(src), "-o", str(out), *link], check=True)
    return out.read_bytes()


def _wheel(tmp_path, so, metadata, tag="linux_x86_64"):
    path = tmp_path / f"flow_core-0.1.0-cp311-cp311-{tag}.whl"
    di = "flow_core-0.1.0.dist-info"
    files = {"oneflow/libx.so": so, f"{di}/METADATA": metadata.encode(),
             f"{di}/WHEEL": f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\n\nTag: cp311-cp311-{tag}\n".encode(),
             f"{di}/licenses/LICENSE": b"Apache-2.0\n"}
    with zipfile.ZipFile(path, "w") as z:
        record = []
        for n, data in files.items():
            z.writestr(n, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{n},sha256={digest},{len(data)}")
        z.writestr(f"{di}/RECORD", "\n".join(record + [f"{di}/RECORD,,"]) + "\n")
    return str(path)


def test_bad_wheel_fails_for_each_reason(tmp_path):
    so = _so(tmp_path, "bad.so", "-Wl,--no-as-needed", "-lgomp", "-Wl,-rpath,/home/ci/build/lib:$ORIGIN/../nowhere")
    wheel = _wheel(tmp_path, so, "Metadata-Version: 2.1\nName: flow-core\nVersion: 0.1.0\n")
    problems, platform = check_wheel.check_wheel(wheel, "manylinux1_x86_64")
    text = "\n".join(problems)
    assert platform == "manylinux1_x86_64"
    assert "'/home/ci/build/lib' is not relative to $ORIGIN" in text
    assert "'$ORIGIN/../nowhere' leads to" in text
    assert "needs libgomp.so.1, which is not in the manylinux allowlist" in text
    assert "needs GLIBC_2.14 from libc.so.6, newer than the tag allows (GLIBC_2.5)" in text
    for field in ("Summary", "Author", "Keywords", "License-Expression", "License-File", "Classifier", "readme"):
        assert f"no {field}" in text, field
    assert check_wheel.main([wheel, "--tag", "manylinux1_x86_64"]) == 1


def test_good_wheel_passes_and_retags(tmp_path):
    so = _so(tmp_path, "good.so", "-Wl,-rpath,$ORIGIN")
    wheel = _wheel(tmp_path, so, GOOD_METADATA)
    assert check_wheel.check_wheel(wheel, "manylinux_2_17_x86_64")[0] == []
    # the ELF facts agree with the file: RUNPATH/RPATH, needed libraries, required versions
    elf = check_wheel.Elf(so)
    assert elf.rpath + elf.runpath == ["$ORIGIN"]
    assert "libc.so.6" in elf.needed and "GLIBC_2.14" in elf.versions["libc.so.6"]
    assert check_wheel.main([wheel, "--retag", "auto"]) == 0
    out = tmp_path / "flow_core-0.1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    assert out.exists() and not os.path.exists(wheel)
    with zipfile.ZipFile(out) as z:
        info = z.read("flow_core-0.1.0.dist-info/WHEEL").decode()
        assert "Tag: cp311-cp311-manylinux_2_17_x86_64" in info and "linux_x86_64\n" not in info.replace("manylinux_2_17_x86_64", "")
        assert "\n\n" not in info  # a blank line would end the header block before the tag
        record = z.read("flow_core-0.1.0.dist-info/RECORD").decode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(info.encode()).digest()).rstrip(b"=").decode()
        assert f"flow_core-0.1.0.dist-info/WHEEL,sha256={digest},{len(info)}" in record
    # the retagged wheel checks clean under its new tag
    assert check_wheel.check_wheel(str(out))[0] == []


def test_placeholder_url_and_non_elf(tmp_path):
    so = _so(tmp_path, "good.so", "-Wl,-rpath,$ORIGIN")
    meta = GOOD_METADATA.replace("Requires-Python", "Project-URL: Homepage, https://example.com\nRequires-Python")
    problems, _ = check_wheel.check_wheel(_wheel(tmp_path, so, meta))
    assert problems == ["METADATA: placeholder Project-URL 'Homepage, https://example.com'"]
    with pytest.raises(ValueError, match="not an ELF file"):
        check_wheel.Elf(b"#!/bin/sh\n")
