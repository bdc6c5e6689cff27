"""`zeroclaw eval calibrate label --html PAGE` and `calibrate import FILE`: blind labeling in
a page, for people who prefer one to the terminal, with the same labels file in the end.

The page is one self-contained file: each unlabeled item as `label` shows it (the rubric
and threshold, the user's turns and the agent's answers, the tool calls when the rubric
shows them to the judge, the final response), and pass and fail buttons. The judge's
verdict is not in the page at all, so it cannot be seen before the label is given: it is
said by `import`, label by label, as `label` says it after each answer. A static page
cannot write files: its script keeps the labels in the page and offers them as a labels
file to download, which `import` checks strictly and appends to the suite's labels file.

Every text of the run is untrusted: cleaned, clipped and HTML-escaped (attributes too); no
line is a workflow command; and the Content-Security-Policy runs no script but the page's
own, by its hash, and fetches nothing, so markup in a response could not act even if
escaping failed. The page's script writes only text (`textContent`), never markup.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from harness.errors import ExitCode
from harness.io.atomic import write_atomic
from harness.io.text import clean, clean_lines, clip, inert_markup, policy_for
from harness.judge.labels import (
    LABEL_SCHEMA,
    MAX_SHOWN,
    Item,
    Suite,
    append_label,
    chosen_rubrics,
    items,
    numbered_labels,
    read_labels,
    revealed,
)
from harness.judge.settings import JudgeError

DOWNLOAD = "labels-from-page.jsonl"

_SCRIPT = """(() => {
  "use strict";
  const items = Array.from(document.querySelectorAll("section.item"));
  const given = new Map();
  const status = document.getElementById("status");
  const exported = document.getElementById("export");
  const jsonl = () => items.filter((s) => given.has(s.dataset.item)).map((s) => JSON.stringify({
    item: s.dataset.item, case: s.dataset.case, rubric: s.dataset.rubric,
    setup: s.dataset.setup, label: given.get(s.dataset.item), schema: SCHEMA,
  }) + "\\n").join("");
  const update = () => {
    status.textContent = `${given.size} of ${items.length} labeled`;
    exported.textContent = jsonl();
  };
  for (const section of items) {
    for (const button of section.querySelectorAll("button[data-label]")) {
      button.hidden = false;
      button.addEventListener("click", () => {
        given.set(section.dataset.item, button.dataset.label);
        section.querySelector(".given").textContent = `you: ${button.dataset.label}`;
        for (const b of section.querySelectorAll("button[data-label]")) {
          b.setAttribute("aria-pressed", String(b === button));
        }
        update();
      });
    }
  }
  document.getElementById("download").addEventListener("click", () => {
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([jsonl()], {type: "application/x-ndjson"}));
    link.download = DOWNLOAD;
    document.body.appendChild(link);
    link.click();
    link.remove();
  });
  document.getElementById("bar").hidden = false;
  document.getElementById("noscript").hidden = true;
  update();
})();
""".replace("SCHEMA", json.dumps(LABEL_SCHEMA)).replace("DOWNLOAD", json.dumps(DOWNLOAD))

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5rem; max-width: 60rem; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f4f4f4; padding: .5rem; }
section.item { border-top: 1px solid #ccc; padding-top: .5rem; }
button[aria-pressed="true"] { font-weight: bold; }
#bar { position: sticky; top: 0; background: #fff; padding: .5rem 0; }
"""


def content_security_policy() -> str:
    # The HTML report's policy, for this page's own script.
    return policy_for(_SCRIPT)


def write_page(suite: Suite, names: Sequence[str], path: Path, out: TextIO) -> int:
    """The labeling page of every unlabeled item of the chosen rubrics, written to `path`."""
    chosen = chosen_rubrics(suite, names)
    done = {lab.item for lab in read_labels(suite.labels_path)}
    todo = [item for item in items(suite.judge.store, chosen) if item.key not in done]
    write_atomic(path, render_page(todo))
    print(
        f"{len(todo)} recorded verdict(s) to label in {path}: label them in a browser, "
        f"download the labels ({DOWNLOAD}) and add them with "
        "`zeroclaw eval calibrate import FILE`",
        file=out,
    )
    return ExitCode.PASSED


def _t(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return html.escape(clean_lines(clip(text, MAX_SHOWN)))


def _shown(title: str, value: Any) -> str:
    return f"<h3>{html.escape(title)}</h3>\n<pre>{_t(value)}</pre>"


def _item(item: Item, number: int, total: int) -> str:
    run = item.run()
    attrs = " ".join(
        f'data-{name}="{html.escape(clean(value), quote=True)}"'
        for name, value in (
            ("item", item.key),
            ("case", item.case),
            ("rubric", item.rubric.name),
            ("setup", item.setup),
        )
    )
    parts = [
        f'<section class="item" {attrs}>',
        f"<h2>{number}/{total}: case {_t(item.case)}, rubric {_t(item.rubric.name)}</h2>",
        _shown(f"rubric (threshold {item.rubric.threshold:.2f})", item.rubric.rubric.strip()),
    ]
    turns = run.get("turns")
    for i, turn in enumerate(turns if isinstance(turns, list) else [], 1):
        if isinstance(turn, dict):
            parts.append(_shown(f"user, turn {i}", turn.get("user", "")))
            parts.append(_shown(f"agent, turn {i}", turn.get("agent", "")))
    calls = run.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict):
            shown = {k: call.get(k) for k in ("arguments", "result", "succeeded")}
            parts.append(_shown(f"tool call {clean(str(call.get('tool', '?')))}", shown))
    parts += [
        _shown("final response", run.get("final_response", "")),
        '<p><button type="button" data-label="pass" aria-pressed="false" hidden>pass</button> '
        '<button type="button" data-label="fail" aria-pressed="false" hidden>fail</button> '
        '<span class="given"></span></p>',
        "</section>",
    ]
    return "\n".join(parts)


def render_page(todo: Sequence[Item]) -> bytes:
    body = [_item(item, number, len(todo)) for number, item in enumerate(todo, 1)]
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{content_security_policy()}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>zeroclaw-eval: label {len(todo)} judge verdict(s)</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>Label the judge's verdicts, blind</h1>",
        "<p>For each item: would this final response pass the rubric? The judge's verdict "
        "is not in this page; <code>zeroclaw eval calibrate import</code> says it for each "
        "label. Labels live in this page until downloaded: download them before closing "
        "it.</p>",
        '<p id="noscript">Labeling in this page needs scripts; without them, use '
        "<code>zeroclaw eval calibrate label</code> in a terminal.</p>",
        '<div id="bar" hidden><span id="status"></span> '
        '<button type="button" id="download">download labels</button></div>',
        *(body or ["<p>Every recorded verdict is labeled already.</p>"]),
        "<h2>Labels given (the downloaded file)</h2>",
        '<pre id="export"></pre>',
        f"<script>{_SCRIPT}</script>\n</body></html>\n",
    ]
    return inert_markup("\n".join(parts)).encode("utf-8", "replace")


def import_labels(suite: Suite, path: Path, out: TextIO) -> int:
    """The labels downloaded from a page, added to the suite's labels file: all of them,
    or none when one line is not a label of a recorded verdict of the suite as it is now,
    does not match the item it names, or labels an item labeled already."""
    known = {item.key: item for item in items(suite.judge.store, suite.rubrics)}
    have = {label.item: number for number, label in numbered_labels(suite.labels_path)}
    new = numbered_labels(path)
    for number, label in new:
        where = f"{path}:{number}"
        item = known.get(label.item)
        if item is None:
            raise JudgeError(
                f"{where}: item {clean(label.item[:12])} is no recorded verdict of the "
                "suite's rubrics under the judge setup they have now (another suite's label, "
                "or a rubric, the judge or a run changed since the page was written)"
            )
        if (label.case, label.rubric, label.setup) != (item.case, item.rubric.name, item.setup):
            raise JudgeError(
                f"{where}: item {label.item[:12]} is case {clean(item.case)}, rubric "
                f"{clean(item.rubric.name)} under setup {item.setup[:12]}; the line says case "
                f"{clean(label.case)}, rubric {clean(label.rubric)}, setup "
                f"{clean(label.setup[:12])}: not the item it was given on"
            )
        if label.item in have:
            raise JudgeError(
                f"{where}: item {label.item[:12]} is labeled already "
                f"({suite.labels_path}:{have[label.item]}): remove one"
            )
    for _, label in new:
        append_label(suite.labels_path, label)
        out.write(f"{clean(label.case)}: " + revealed(known[label.item], label.label))
    print(f"imported {len(new)} label(s) into {suite.labels_path}", file=out)
    return ExitCode.PASSED
