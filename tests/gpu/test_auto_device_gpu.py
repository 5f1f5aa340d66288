"""--device auto on a GPU machine: a small input takes the CPU (msa.run.plan's cost model), a
larger one the GPU, and either way the bytes are --device cpu's."""
from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "datasets"))
from simulate import SimParams, simulate  # noqa: E402

EXAMPLE = REPO / "datasets" / "examples" / "example.fa"


def test_auto_takes_the_cpu_for_the_example_and_the_gpu_past_the_size(run_msa, tmp_path: Path) -> None:
    from msa.run.plan import auto_device, input_bytes

    fam = simulate(SimParams(n=4000, length=300, seed=4))  # ~1.3 MB: the GPU on hosts of up to ~200 cores
    big = tmp_path / "big.fa"
    big.write_bytes(b"".join(
        b">" + name.encode() + b"\n" + fam.residues[fam.offsets[i] : fam.offsets[i + 1]].tobytes() + b"\n"
        for i, name in enumerate(fam.names)
    ))
    assert auto_device(input_bytes(str(big)), 4000) == "cuda" and auto_device(input_bytes(str(EXAMPLE)), 200) == "cpu"
    for source, chosen in ((EXAMPLE, b"msa: using the CPU for a small input"), (big, b"msa: using the GPU")):
        auto = run_msa("align", source, cwd=tmp_path)
        cpu = run_msa("align", source, "--device", "cpu", "-q", cwd=tmp_path)
        assert auto.returncode == 0 and cpu.returncode == 0, auto.stderr
        assert chosen in auto.stderr, auto.stderr
        assert auto.stdout == cpu.stdout
