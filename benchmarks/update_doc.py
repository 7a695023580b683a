"""Put a run's machine and tables into BENCHMARKS.md (between the ``results:begin``/``end``
markers), so the document always shows one whole run.

    .venv/bin/python benchmarks/update_doc.py [benchmarks/results/latest.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import summary  # noqa: E402

BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


def machine_text(res: dict, path: Path) -> str:
    m = res["machine"]
    libs = ", ".join(f"{k} {v or 'not installed'}" for k, v in m["libs"].items())
    load = ", ".join(f"{x:.2f}" for x in m["loadavg"])
    load_end = ", ".join(f"{x:.2f}" for x in m.get("loadavg_end", ()))
    return (f"- {m['nproc']} CPUs ({m['cpu']}), {m['platform']}, Python {m['python']}\n"
            f"- {libs}\n"
            f"- load average (1, 5, 15 min) at the start: {load}; at the end: {load_end} "
            f"(the machine was shared with other work; see the CPU-second rates)\n"
            f"- run started {res['started']}, took {res.get('duration_s', 0) / 60:.0f} min; "
            f"raw numbers: `benchmarks/results/{path.name}`\n"
            f"{commit_text(m.get('git') or {})}")


def commit_text(git: dict) -> str:
    """The measured commit, and whether runner/ or plugins/ had uncommitted changes."""
    if not git.get("commit"):
        return ""
    dirty = git.get("uncommitted")
    return (f"- kinrun at commit `{git['commit']}`"
            + (" with uncommitted changes in runner/ or plugins/" if dirty else
               ", nothing uncommitted in runner/ or plugins/") + "\n")


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "results" / "latest.json"
    res = json.loads(path.read_text())
    res["summary"] = summary.summarize(res)
    block = f"{BEGIN}\n{machine_text(res, path)}\n{summary.markdown(res)}{END}"
    doc_path = HERE.parent / "BENCHMARKS.md"
    doc = doc_path.read_text()
    start, end = doc.index(BEGIN), doc.index(END) + len(END)
    doc_path.write_text(doc[:start] + block + doc[end:])
    print(f"updated {doc_path} from {path}")


if __name__ == "__main__":
    main()
