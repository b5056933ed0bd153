"""Re-run a script inside its own pinned venv: shared by scripts/kernels/distill.py,
scripts/kernels/distill_amd.py and scripts/peers/aic-compare.py."""

from __future__ import annotations

import importlib.metadata as md
import os
import subprocess
import sys
from pathlib import Path


def ensure(venv: Path, requirements: Path, pins: dict[str, str], script: str, modules: tuple[str, ...] = ()) -> None:
    """Return when every package of `pins` is installed here at its version (and `modules`
    import); otherwise create `venv` if needed, install `requirements` into it and re-execute
    `script` there with the same arguments."""
    try:
        for module in modules:
            __import__(module)
        if all(md.version(package) == version for package, version in pins.items()):
            return
    except Exception:
        pass
    wanted = ", ".join(f"{package}=={version}" for package, version in pins.items())
    py = venv / "bin" / "python"
    if Path(sys.prefix).resolve() == venv.resolve():
        sys.exit(f"venv {venv} does not hold {wanted} after install; delete it and rerun")
    if not py.exists():
        print(f"creating venv {venv}", file=sys.stderr)
        subprocess.check_call([sys.executable, "-m", "venv", str(venv)])
    print(f"installing {requirements} into {venv}", file=sys.stderr)
    subprocess.check_call([str(py), "-m", "pip", "install", "-q", "-r", str(requirements)])
    os.execv(str(py), [str(py), str(Path(script).resolve()), *sys.argv[1:]])
