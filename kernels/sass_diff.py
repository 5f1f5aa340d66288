"""Compare the SASS of every kernel in msa/_cubin with that of another revision's fatbins.

A refactor of the kernel sources (a file split, a constant moved to a ``-D`` option) should
leave the machine code unchanged; this shows it without a GPU::

    python kernels/build.py && python kernels/sass_diff.py main    # against main's msa/_cubin

needs ``cuobjdump`` and ``nvdisasm`` on PATH (the CUDA toolkit, or the nvidia-cuda-cuobjdump
and nvidia-cuda-nvdisasm wheels). Kernels are matched by (architecture, function name), whatever
module holds them; a name in several modules (lcs_pack) is matched by module too. cuobjdump pads
its columns to the widest line of a file, so runs of blanks are folded before comparing; nothing
else is normalised (addresses, registers, encodings and labels must match). Exit 1 if any differ.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CUBIN = "msa/_cubin"


def sass(folder: Path) -> dict[tuple[str, str, str], str]:
    """{(arch, function, module): SASS text} of every fatbin in ``folder``."""
    out = {}
    for fatbin in sorted(folder.glob("*.fatbin")):
        module = fatbin.stem.split("__")[0]
        text = subprocess.run(["cuobjdump", "-sass", str(fatbin)], capture_output=True, text=True, check=True).stdout
        arch = function = None
        for line in text.splitlines():
            if m := re.match(r"\s*code for (sm_\d+)", line):
                arch, function = m[1], None
            elif m := re.match(r"\s*Function : (\S+)", line):
                function = m[1]
                out[arch, function, module] = ""
            elif re.match(r"\s*(Fatbin|\.{5,})", line):
                function = None
            elif function and line.strip():
                out[arch, function, module] += " ".join(line.split()) + "\n"
    return out


def revision_fatbins(revision: str, folder: Path) -> Path:
    """The fatbins of msa/_cubin at git ``revision``, written into ``folder``."""
    names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", f"{revision}:{CUBIN}"],
                           capture_output=True, text=True, check=True).stdout.split()
    for name in names:
        if name.endswith(".fatbin"):
            blob = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:{CUBIN}/{name}"],
                                  capture_output=True, check=True).stdout
            (folder / name).write_bytes(blob)
    return folder


def compare(old: dict, new: dict) -> list[str]:
    """One line per kernel of ``old`` whose SASS in ``new`` differs or is missing, and per new kernel."""
    def by_name(table):
        names: dict[tuple[str, str], list] = {}
        for (arch, function, module), code in table.items():
            names.setdefault((arch, function), []).append((module, code))
        return names

    old_names, new_names = by_name(old), by_name(new)
    problems = []
    for key in sorted(old_names.keys() | new_names.keys()):
        a, b = old_names.get(key, []), new_names.get(key, [])
        if len(a) > 1 or len(b) > 1:  # the same name in several modules: match by module
            a_codes, b_codes = dict(a), dict(b)
            same = a_codes == b_codes
        else:
            same = bool(a) and bool(b) and a[0][1] == b[0][1]
        if not same:
            where = f"{[m for m, _ in a]} -> {[m for m, _ in b]}"
            problems.append(f"{key[0]} {key[1]}: {'differs' if a and b else 'missing'} ({where})")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("revision", help="git revision whose msa/_cubin to compare against (e.g. main)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        old = sass(revision_fatbins(args.revision, Path(tmp)))
    new = sass(ROOT / CUBIN)
    problems = compare(old, new)
    for line in problems:
        print(line)
    print(f"{len(problems)} differ or missing; {len(old)} kernels x architectures before, {len(new)} now")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
