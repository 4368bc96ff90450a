#!/usr/bin/env python3
"""An auditwheel-style inspection of a built wheel, in plain Python (the ELF files are parsed here; objdump is
used only for the optional instruction check):

- every ELF file's RPATH/RUNPATH entries are $ORIGIN-relative and lead to a directory the install fills
  (the wheel's own files, or <prefix>/lib where dependencies' data files such as oneDNN's libdnnl land);
- every DT_NEEDED library is in the manylinux allowlist, shipped in the wheel, or shipped by a declared
  dependency (read from that distribution's installed RECORD);
- no symbol version needed from the system libraries is newer than the platform tag claims (GLIBC_,
  GLIBCXX_, CXXABI_, GCC_), with the manylinux policy's limits;
- the metadata names a license, its file, the authors, a summary, a readme, keywords and classifiers;
- with --check-isa, no exported function of the baseline code uses AVX (VEX/EVEX) instructions unless it is
  one of the run-time-dispatched variants.

    python ci/check_wheel.py dist/flow_core-*.whl                     # check against the wheel's own tag
    python ci/check_wheel.py WHEEL --tag manylinux_2_28_x86_64        # check against another tag
    python ci/check_wheel.py WHEEL --retag manylinux_2_28_x86_64      # check, then rename the wheel to it
    python ci/check_wheel.py WHEEL --retag auto     # the oldest manylinux tag it passes as (linux_* if none)

Exit status 1 with one line per problem when any check fails.
"""
import argparse
import base64
import csv
import email.parser
import hashlib
import io
import os
import posixpath
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile

# The libraries a manylinux wheel may take from the system (PEP 600 / auditwheel's policy, x86_64).
ALLOWED_LIBS = {
    "libgcc_s.so.1", "libstdc++.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libc.so.6", "libnsl.so.1",
    "libutil.so.1", "libpthread.so.0", "libresolv.so.2", "libX11.so.6", "libXext.so.6", "libXrender.so.1",
    "libICE.so.6", "libSM.so.6", "libGL.so.1", "libgobject-2.0.so.0", "libgthread-2.0.so.0",
    "libglib-2.0.so.0", "ld-linux-x86-64.so.2", "libz.so.1", "libexpat.so.1",
}
# Newest GLIBCXX_ / CXXABI_ / GCC_ versions each manylinux glibc level guarantees (the libstdc++ and libgcc
# of the reference distribution of that policy: CentOS 7, AlmaLinux 8, Ubuntu 20.04, AlmaLinux 9, Ubuntu
# 22.04, Debian 12).
POLICY = [  # (glibc minor, GLIBCXX, CXXABI, GCC)
    (17, (3, 4, 19), (1, 3, 7), (4, 8, 0)),
    (28, (3, 4, 24), (1, 3, 11), (7, 0, 0)),
    (31, (3, 4, 28), (1, 3, 12), (7, 0, 0)),
    (34, (3, 4, 29), (1, 3, 13), (7, 0, 0)),
    (35, (3, 4, 30), (1, 3, 13), (12, 0, 0)),
    (36, (3, 4, 30), (1, 3, 13), (12, 0, 0)),
]
LEGACY_TAGS = {"manylinux2014": 17, "manylinux2010": 12, "manylinux1": 5}
REQUIRED_METADATA = ["Name", "Version", "Summary", "Requires-Python", "Author", "Keywords"]

DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_RPATH, DT_RUNPATH = 1, 5, 10, 15, 29
SHT_DYNSYM, SHT_DYNAMIC, SHT_GNU_VERNEED = 11, 6, 0x6FFFFFFE
STT_FUNC = 2


# ------------------------------------------------------------------------------------------------- ELF parsing
class Elf:
    """The dynamic-linking facts of a 64-bit little-endian ELF file: needed libraries, search paths, the symbol
    versions it requires of each library, and its exported functions (name, binding, file offset, size)."""

    def __init__(self, data):
        if data[:4] != b"\x7fELF":
            raise ValueError("not an ELF file")
        if data[4] != 2 or data[5] != 1:
            raise ValueError("only 64-bit little-endian ELF files are checked")
        self.data = data
        (self.machine,) = struct.unpack_from("<H", data, 18)
        shoff, = struct.unpack_from("<Q", data, 40)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
        self.sections = []
        for i in range(shnum):
            name, typ, flags, addr, off, size, link, info, align, entsize = struct.unpack_from(
                "<IIQQQQIIQQ", data, shoff + i * shentsize)
            self.sections.append({"name": name, "type": typ, "addr": addr, "off": off, "size": size,
                                  "link": link, "info": info, "entsize": entsize})
        self.needed, self.rpath, self.runpath = [], [], []
        self.versions = {}  # library -> set of version names required of it
        self.functions = []
        for sec in self.sections:
            if sec["type"] == SHT_DYNAMIC:
                self._dynamic(sec)
            elif sec["type"] == SHT_GNU_VERNEED:
                self._verneed(sec)
            elif sec["type"] == SHT_DYNSYM:
                self._dynsym(sec)

    def _str(self, strsec, off):
        base = self.sections[strsec]["off"] + off
        end = self.data.index(b"\0", base)
        return self.data[base:end].decode("utf-8", "replace")

    def _dynamic(self, sec):
        for i in range(sec["size"] // 16):
            tag, val = struct.unpack_from("<qQ", self.data, sec["off"] + 16 * i)
            if tag == 0:
                break
            if tag == DT_NEEDED:
                self.needed.append(self._str(sec["link"], val))
            elif tag in (DT_RPATH, DT_RUNPATH):
                entries = [e for e in self._str(sec["link"], val).split(":") if e]
                (self.rpath if tag == DT_RPATH else self.runpath).extend(entries)

    def _verneed(self, sec):
        off, count = sec["off"], sec["info"]
        for _ in range(count):
            _, cnt, file_off, aux, nxt = struct.unpack_from("<HHIII", self.data, off)
            lib = self._str(sec["link"], file_off)
            a = off + aux
            for _ in range(cnt):
                _, _, _, name, anext = struct.unpack_from("<IHHII", self.data, a)
                self.versions.setdefault(lib, set()).add(self._str(sec["link"], name))
                if not anext:
                    break
                a += anext
            if not nxt:
                break
            off += nxt

    def _dynsym(self, sec):
        for i in range(sec["size"] // 24):
            name, info, _, shndx, value, size = struct.unpack_from("<IBBHQQ", self.data, sec["off"] + 24 * i)
            if (info & 0xF) != STT_FUNC or shndx == 0 or size == 0:
                continue
            target = self.sections[shndx]
            offset = value - target["addr"] + target["off"]
            self.functions.append((self._str(sec["link"], name), info >> 4, offset, size, value))


# --------------------------------------------------------------------------------------------------- the tag
def tag_glibc(platform_tag):
    """The glibc minor version a platform tag guarantees, or None for a tag that promises nothing (linux_*)."""
    m = re.fullmatch(r"manylinux_2_(\d+)_x86_64", platform_tag)
    if m:
        return int(m.group(1))
    for legacy, minor in LEGACY_TAGS.items():
        if platform_tag == f"{legacy}_x86_64":
            return minor
    return None


def policy_limits(glibc_minor):
    """(GLIBCXX, CXXABI, GCC) limits of the newest policy at or below the glibc level."""
    best = POLICY[0]
    for row in POLICY:
        if row[0] <= glibc_minor:
            best = row
    return best[1:]


def parse_version(name, prefix):
    if not name.startswith(prefix):
        return None
    try:
        return tuple(int(x) for x in name[len(prefix):].split("."))
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------------- checks
def dependency_libraries(requires):
    """Shared-library file names the declared dependencies install (from their installed RECORD), and the
    dependencies not installed here (whose files cannot be known)."""
    from importlib import metadata

    libs, missing = {}, []
    for req in requires:
        if ";" in req and "extra ==" in req:
            continue  # optional extras are not there at run time
        name = re.split(r"[\s<>=!~;\[(]", req.strip(), maxsplit=1)[0]
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
            continue
        for f in dist.files or []:
            base = posixpath.basename(str(f))
            if ".so" in base:
                # where the file lands, relative to the install prefix (data files climb out of site-packages)
                libs[base] = posixpath.normpath(posixpath.join("lib/python/site-packages", str(f)))
    return libs, missing


def rpath_targets(entry, elf_dir):
    """Where an $ORIGIN-relative entry leads, relative to the install prefix, for an ELF file at elf_dir
    (relative to site-packages), in both layouts pip installs platform packages into: <prefix>/lib/pythonX.Y/
    site-packages and <prefix>/lib64/pythonX.Y/site-packages (data files still go to <prefix>/lib)."""
    rel = re.sub(r"^\$(ORIGIN|\{ORIGIN\})", "", entry).lstrip("/")
    out = []
    for libdir in ("lib", "lib64"):
        site = f"{libdir}/python/site-packages"
        out.append(posixpath.normpath(posixpath.join(site, elf_dir, rel)))
    return out


def check_elf(path, elf, wheel_dirs, wheel_libs, dep_libs, glibc_minor, problems):
    entries = elf.rpath + elf.runpath
    elf_dir = posixpath.dirname(path)
    search = []  # directories (relative to the prefix) the loader will look in
    for entry in entries:
        if not re.match(r"^\$(ORIGIN|\{ORIGIN\})(/|$)", entry):
            problems.append(f"{path}: RPATH/RUNPATH entry {entry!r} is not relative to $ORIGIN "
                            "(an absolute or build-machine path)")
            continue
        targets = rpath_targets(entry, elf_dir)
        useful = [t for t in targets if t in wheel_dirs or t == "lib"]
        if not useful:
            problems.append(f"{path}: RPATH/RUNPATH entry {entry!r} leads to {' or '.join(sorted(set(targets)))},"
                            " where neither this wheel nor a dependency puts files")
        search.extend(useful)
    for lib in elf.needed:
        if lib in ALLOWED_LIBS:
            continue
        shipped = [d for d in search if posixpath.join(d, lib) in wheel_libs]
        dep = dep_libs.get(lib)
        if shipped or (dep and posixpath.dirname(dep) in search):
            continue
        where = f" (a dependency installs it at <prefix>/{dep}, which no RPATH entry reaches)" if dep else ""
        problems.append(f"{path}: needs {lib}, which is not in the manylinux allowlist, not shipped in the wheel "
                        f"and not installed by a declared dependency{where}")
    if glibc_minor is None:
        return
    cxx_max, abi_max, gcc_max = policy_limits(glibc_minor)
    limits = {"GLIBC_": (2, glibc_minor), "GLIBCXX_": cxx_max, "CXXABI_": abi_max, "GCC_": gcc_max}
    for lib, names in elf.versions.items():
        if lib not in ALLOWED_LIBS:
            continue  # versions of a shipped library are that library's business
        for name in names:
            for prefix, limit in limits.items():
                v = parse_version(name, prefix)
                if v is not None and v > tuple(limit):
                    problems.append(f"{path}: needs {name} from {lib}, newer than the tag allows "
                                    f"({prefix}{'.'.join(map(str, limit))})")


def check_metadata(meta_text, dist_files, problems):
    msg = email.parser.Parser().parsestr(meta_text)
    for field in REQUIRED_METADATA:
        if not (msg.get(field) or "").strip():
            alt = {"Author": "Author-email"}.get(field)
            if not (alt and (msg.get(alt) or "").strip()):
                problems.append(f"METADATA: no {field}")
    if not (msg.get("License-Expression") or msg.get("License")):
        problems.append("METADATA: no License-Expression (or License)")
    license_files = msg.get_all("License-File") or []
    if not license_files:
        problems.append("METADATA: no License-File")
    for lf in license_files:
        if not any(f.endswith("/licenses/" + lf) or f.endswith("/" + lf) for f in dist_files):
            problems.append(f"METADATA: License-File {lf} is not in the wheel")
    if not msg.get_all("Classifier"):
        problems.append("METADATA: no Classifier")
    if not (msg.get_payload() or "").strip() or not msg.get("Description-Content-Type"):
        problems.append("METADATA: no readme (long description with its content type)")
    for url in msg.get_all("Project-URL") or []:
        if re.search(r"example\.(com|org)|placeholder|TODO", url, re.I):
            problems.append(f"METADATA: placeholder Project-URL {url!r}")
    return msg


# The exported functions that may use AVX: the run-time-dispatched variants (core/cpu_isa.h) and the
# AVX2 + FMA kernels, which are called only where cpu_isa() allows.
DISPATCHED = re.compile(r"isa_detail::run_avx|sgemm_detail::|packed_sgemm_(tn|rows|small)|sgemm_microkernel_6x16|"
                        r"PackedB::(pack|multiply)_own|winograd_conv_|half_vec_detail::")


def check_isa(path, elf, data, problems):
    """Exported functions with VEX/EVEX-encoded instructions outside the dispatched set (objdump decodes)."""
    objdump = shutil.which("objdump")
    if objdump is None or elf.machine != 62:
        return False
    with tempfile.NamedTemporaryFile(suffix=".so") as tmp:
        tmp.write(data)
        tmp.flush()
        out = subprocess.run([objdump, "-d", "-C", "--no-show-raw-insn", tmp.name], capture_output=True,
                             text=True, check=True).stdout
    # exported function start -> (end, demangled name, whether it has AVX code); a stripped library has no
    # labels for its local functions, so an instruction counts only inside its function's [start, start + size)
    bounds = {value: value + size for _, _, _, size, value in elf.functions}
    demangled = {}
    current = None
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
        if m:
            addr = int(m.group(1), 16)
            current = addr if addr in bounds else None
            if current is not None:
                demangled[current] = [m.group(2), False]
            continue
        if current is None or demangled[current][1]:
            continue
        parts = line.split("\t")
        m = re.match(r"^\s*([0-9a-f]+):", parts[0])
        if not m or int(m.group(1), 16) >= bounds[current]:
            continue
        if len(parts) >= 2 and re.match(r"\s*v[a-z]", parts[-1]) and "vmcall" not in parts[-1]:
            demangled[current][1] = True
    for name, avx in demangled.values():
        if avx and not DISPATCHED.search(name):
            problems.append(f"{path}: exported function {name} uses AVX instructions outside the dispatched "
                            "variants (would break on an x86-64-v2 CPU)")
    return True


def check_wheel(wheel, tag=None, isa=False):
    """Problems found in the wheel (a list of lines) and the platform tag it was checked against."""
    problems = []
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
        wheel_tags = [line.split(":", 1)[1].strip() for line in z.read(f"{dist_info}/WHEEL").decode().splitlines()
                      if line.startswith("Tag:")]
        platform = tag or (wheel_tags[0].split("-")[-1] if wheel_tags else "any")
        msg = check_metadata(z.read(f"{dist_info}/METADATA").decode(), [n for n in names if n.startswith(dist_info)],
                             problems)
        dep_libs, missing = dependency_libraries(msg.get_all("Requires-Dist") or [])
        for name in missing:
            problems.append(f"dependency {name} is not installed here, so the libraries it provides are unknown")
        # installed paths relative to the prefix (first layout: lib/python/site-packages)
        def installed(n):
            if ".data/" in n.split("/")[0] + "/":
                parts = n.split("/")
                scheme, rest = parts[1], "/".join(parts[2:])
                if scheme in ("purelib", "platlib"):
                    return posixpath.join("lib/python/site-packages", rest)
                return posixpath.join(scheme if scheme != "data" else "", rest).lstrip("/")
            return posixpath.join("lib/python/site-packages", n)
        files = {installed(n): n for n in names if not n.endswith("/")}
        wheel_dirs = set()
        for f in files:
            d = posixpath.dirname(f)
            while d and d not in wheel_dirs:
                wheel_dirs.add(d)
                wheel_dirs.add(d.replace("lib/python/", "lib64/python/", 1))
                d = posixpath.dirname(d)
        wheel_libs = set(files) | {f.replace("lib/python/", "lib64/python/", 1) for f in files}
        glibc_minor = tag_glibc(platform)
        if platform.startswith("manylinux") and glibc_minor is None:
            problems.append(f"unknown platform tag {platform}")
        checked_isa = False
        for inst, n in files.items():
            data = z.read(n)
            if data[:4] != b"\x7fELF":
                continue
            rel = n if ".data/" not in n else inst
            try:
                elf = Elf(data)
            except ValueError as e:
                problems.append(f"{rel}: {e}")
                continue
            check_elf(rel, elf, wheel_dirs, wheel_libs, dep_libs, glibc_minor, problems)
            if isa:
                checked_isa |= check_isa(rel, elf, data, problems)
        if isa and not checked_isa:
            print("check_wheel: no objdump here (or no x86-64 code): instruction check skipped", file=sys.stderr)
    return problems, platform


# --------------------------------------------------------------------------------------------------- retagging
def retag(wheel, platform):
    """Rewrites the wheel under another platform tag (the file name, WHEEL's Tag lines and RECORD's hash of
    WHEEL); returns the new path. The old file is removed."""
    base = os.path.basename(wheel)
    name, ver, py, abi, _ = base[:-4].split("-")
    out = os.path.join(os.path.dirname(wheel), f"{name}-{ver}-{py}-{abi}-{platform}.whl")
    with zipfile.ZipFile(wheel) as src:
        dist_info = next(n.split("/")[0] for n in src.namelist() if n.split("/")[0].endswith(".dist-info"))
        wheel_txt = src.read(f"{dist_info}/WHEEL").decode()
        # (no blank lines: one would end WHEEL's header block before the Tag lines)
        lines = [ln for ln in wheel_txt.splitlines() if ln.strip() and not ln.startswith("Tag:")]
        lines += [f"Tag: {p}-{a}-{platform}" for p in py.split(".") for a in abi.split(".")]
        new_wheel = ("\n".join(lines) + "\n").encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(new_wheel).digest()).rstrip(b"=").decode()
        record_name = f"{dist_info}/RECORD"
        rows = list(csv.reader(io.StringIO(src.read(record_name).decode())))
        for row in rows:
            if row and row[0] == f"{dist_info}/WHEEL":
                row[1], row[2] = f"sha256={digest}", str(len(new_wheel))
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows)
        tmp = out + ".tmp"
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in src.infolist():
                if info.filename == f"{dist_info}/WHEEL":
                    dst.writestr(info, new_wheel)
                elif info.filename == record_name:
                    dst.writestr(info, buf.getvalue())
                else:
                    dst.writestr(info, src.read(info.filename))
    os.replace(tmp, out)
    if os.path.abspath(out) != os.path.abspath(wheel):
        os.remove(wheel)
    return out


def oldest_tag(wheel, isa):
    """The oldest policy tag the wheel passes as, with the problems of the newest when it passes none."""
    problems = []
    for minor, *_ in POLICY:
        tag = f"manylinux_2_{minor}_x86_64"
        problems, _ = check_wheel(wheel, tag)  # the instruction check does not depend on the tag: once, below
        if not problems:
            return tag, check_wheel(wheel, tag, isa)[0] if isa else []
    return None, problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel")
    ap.add_argument("--tag", help="platform tag to check against (default: the wheel's own)")
    ap.add_argument("--retag", metavar="TAG", help="check against TAG, then rename the wheel to it")
    ap.add_argument("--check-isa", action="store_true",
                    help="also look for AVX instructions outside the dispatched kernels (needs objdump)")
    args = ap.parse_args(argv)
    if args.retag == "auto":
        tag, problems = oldest_tag(args.wheel, args.check_isa)
        if tag is None or problems:
            print(f"check_wheel: {os.path.basename(args.wheel)} passes as no manylinux tag:", file=sys.stderr)
            for p in problems:
                print("  " + p, file=sys.stderr)
            return 1
        print(retag(args.wheel, tag))
        return 0
    problems, platform = check_wheel(args.wheel, args.retag or args.tag, args.check_isa)
    if problems:
        print(f"check_wheel: {os.path.basename(args.wheel)} fails as {platform}:", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    if args.retag:
        print(retag(args.wheel, args.retag))
    else:
        print(f"check_wheel: {os.path.basename(args.wheel)} passes as {platform}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
