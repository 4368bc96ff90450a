#!/usr/bin/env python3
"""Developer build of flow-core's extension, in place: configures once, rebuilds incrementally with ninja,
and copies _C and libflow_core.so into src/oneflow so that `PYTHONPATH=packages/flow-core/src` imports them.
Builds are serialised with a lock so that several shells can call this at once.

The build is the portable one the wheel ships (x86-64-v2 with run-time AVX2 dispatch), so it tests what users
get and shares ccache's objects with ci/build_wheel.sh; --native compiles for this machine's CPU instead
(-march=native, FLOW_NATIVE=ON), e.g. to compare the two (bench/), and --portable switches back.

    python dev/build.py [--build-dir DIR] [--native | --portable]
"""
import argparse
import fcntl
import re
import glob
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORE = os.path.join(ROOT, "packages", "flow-core")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.path.join(CORE, "build", "dev"))
    kind = ap.add_mutually_exclusive_group()
    kind.add_argument("--native", action="store_const", const="ON", dest="native",
                      help="compile for this CPU only (-march=native); kept for later builds in this folder")
    kind.add_argument("--portable", action="store_const", const="OFF", dest="native",
                      help="the default: the wheel's portable build")
    args = ap.parse_args()
    os.makedirs(args.build_dir, exist_ok=True)
    with open(os.path.join(args.build_dir, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cache = os.path.join(args.build_dir, "CMakeCache.txt")
        current = None
        if os.path.exists(cache):
            with open(cache) as f:
                m = re.search(r"^FLOW_NATIVE:BOOL=(\w+)$", f.read(), re.M)
            current = m.group(1).upper() if m else "OFF"
        if current is None or (args.native and args.native != current):
            subprocess.check_call(["cmake", "-S", CORE, "-B", args.build_dir, "-G", "Ninja",
                                   f"-DPython_EXECUTABLE={sys.executable}", f"-DFLOW_NATIVE={args.native or 'OFF'}"])
        subprocess.check_call(["cmake", "--build", args.build_dir])
        # headers for C++ plugins built against this build (oneflow.sysconfig.get_include() looks here)
        inc = os.path.join(args.build_dir, "include")
        os.makedirs(inc, exist_ok=True)
        link = os.path.join(inc, "oneflow")
        if not os.path.lexists(link):
            os.symlink(os.path.join(CORE, "csrc"), link)
        # the binding module and the core library it links (found beside it through $ORIGIN)
        built = [*glob.glob(os.path.join(args.build_dir, "_C*.so")),
                 *glob.glob(os.path.join(args.build_dir, "libflow_core.so"))]
        for so in built:
            dst = os.path.join(CORE, "src", "oneflow", os.path.basename(so))
            tmp = dst + ".tmp"
            shutil.copy2(so, tmp)
            os.replace(tmp, dst)


if __name__ == "__main__":
    main()
