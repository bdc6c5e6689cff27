"""The HTML report's page furniture: its style sheet and its one script (the filter bar),
allowed by its hash (`html.content_security_policy`)."""

STYLE = """
:root{font:14px/1.45 system-ui,sans-serif;color:#1f2328;background:#fff}
[hidden]{display:none!important}body{margin:0 auto;max-width:1120px;padding:12px 24px}
h1{font-size:20px;margin:4px 0}h2{font-size:17px;margin:18px 0 6px}
h3,h4{font-size:14px;margin:10px 0 4px}#verdict{font-size:18px;margin:4px 0}
header{border-left:10px solid;padding:6px 16px;margin:8px 0 14px}
header.passed{border-color:#1a7f37;background:#dafbe1}
header.failed{border-color:#cf222e;background:#ffebe9}
table{border-collapse:collapse;margin:4px 0}th{background:#f6f8fa}
th,td{border:1px solid #d0d7de;padding:2px 8px;text-align:left;vertical-align:top}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:2px 0;padding:3px 6px;background:#f6f8fa}
pre,code{font:12px/1.4 ui-monospace,monospace}
pre.error{background:#fff8c5;border-left:3px solid #9a6700}
dl{display:grid;grid-template-columns:max-content 1fr;gap:0 12px}dt{color:#57606a}dd{margin:0}
#cases{list-style:none;padding:0}#cases>li{border:1px solid #d0d7de;border-radius:6px;margin:6px 0}
summary{cursor:pointer;padding:5px 10px}.body{padding:2px 14px 10px}.why{margin-left:6px}
.badge{display:inline-block;min-width:60px;text-align:center;border-radius:10px;padding:0 8px;
color:#fff;font-weight:600;font-size:12px}.b-passed{background:#1a7f37}.b-failed{background:#cf222e}
.b-error{background:#9a6700}.b-not_run{background:#6e7781}.b-flaky{background:#8250df}
.where,.why,.sub,.ms{color:#57606a}tr.fail td{background:#ffebe9}tr.fixed td{background:#dafbe1}
.request{border-left:3px solid #d0d7de;padding-left:10px;margin:8px 0}ol.sent{padding-left:20px}
.answer{border-left:3px solid #0969da;padding-left:8px;margin:4px 0}
.role{font-weight:600;margin-right:6px}.unanswered{color:#cf222e;font-weight:600}
#filters{margin:6px 0}#filters button{margin-right:4px}
#filters button[aria-pressed=true]{background:#0969da;color:#fff}svg .grid{stroke:#d0d7de}
svg text{fill:#57606a;font-size:11px}svg .line{fill:none;stroke:#0969da;stroke-width:2}
svg .dot{fill:#0969da}svg .now{fill:#bc4c00}.lines{white-space:pre-wrap}
"""

# The one script, allowed by its hash: the filter bar, shown only when scripts run.
SCRIPT = """
(() => {
  const bar = document.getElementById("filters"), box = document.getElementById("filter-id");
  const cases = Array.from(document.querySelectorAll("#cases > li"));
  const tests = {
    all: () => true, failing: (c) => c.dataset.verdict !== "passed",
    passing: (c) => c.dataset.verdict === "passed", flaky: (c) => c.dataset.flaky === "true",
    errors: (c) => c.dataset.verdict === "error",
  };
  let chosen = "all";
  const apply = () => {
    const needle = box.value.toLowerCase();
    let shown = 0;
    for (const c of cases) {
      c.hidden = !(tests[chosen](c) && c.dataset.id.toLowerCase().includes(needle));
      shown += c.hidden ? 0 : 1;
    }
    document.getElementById("shown").textContent = `${shown} of ${cases.length} case(s) shown`;
  };
  const buttons = Array.from(bar.querySelectorAll("button"));
  for (const button of buttons) {
    button.addEventListener("click", () => {
      chosen = button.dataset.filter;
      for (const b of buttons) b.setAttribute("aria-pressed", String(b === button));
      apply();
    });
  }
  box.addEventListener("input", apply);
  bar.hidden = false;
  apply();
})();
"""
