"use strict";
// The explorer page: every view comes from api/state; every move is a POST to api/<move>.

const $ = (id) => document.getElementById(id);
let view = null;

async function call(path, body) {
  const opts = body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  };
  const r = await fetch(path, opts);
  const data = await r.json();
  if (!r.ok) {
    $("error").textContent = data.error || r.statusText;
    $("error").hidden = false;
    return;
  }
  $("error").hidden = true;
  render(data);
}

const move = (op, index) => call("api/" + op, index === undefined ? {} : { index });

function item(parent, text, cls, onclick) {
  const li = document.createElement("li");
  li.textContent = text;
  if (cls) li.className = cls;
  if (onclick) li.addEventListener("click", onclick);
  parent.appendChild(li);
  return li;
}

function render(v) {
  view = v;
  const params = Object.entries(v.params).map(([k, x]) => `${k}=${x}`).join(", ");
  $("title").textContent = `Lockstep explorer: ${v.spec}`;
  $("params").textContent = params;
  document.title = `${v.spec} — Lockstep explorer`;

  const path = $("path");
  path.replaceChildren();
  v.path.forEach((label, i) => {
    const li = item(path, label, i === v.step ? "current" : "", () => move("goto", i));
    li.dataset.testid = "path-step";
  });

  const violated = v.invariants.filter((x) => !x.holds).map((x) => x.name);
  const status = $("status");
  status.className = "";
  status.textContent = "";
  if (v.choosing_initial) status.textContent = "Choose an initial state.";
  else if (v.failure) { status.className = "failure"; status.textContent = "The next step fails: " + v.failure; }
  else if (violated.length) { status.className = "violation"; status.textContent = "Violation: " + violated.join(", "); }
  else if (v.deadlock) { status.className = "deadlock"; status.textContent = "Deadlock: no step is enabled."; }
  status.dataset.testid = "status";

  $("state-title").textContent = v.step >= 0 ? `State ${v.step}` : "State";
  const state = $("state");
  state.replaceChildren();
  v.state.forEach((line) => {
    const span = document.createElement("span");
    span.textContent = line.text + "\n";
    if (line.changed) span.className = "changed";
    state.appendChild(span);
  });
  $("changes").textContent = v.changes.length ? v.changes.join("\n") : (v.step > 0 ? "(no change)" : "—");

  const invs = $("invariants");
  invs.replaceChildren();
  v.invariants.forEach((x) => {
    const li = item(invs, x.name, "inv " + (x.holds ? "holds" : "violated"));
    li.dataset.testid = "invariant";
    li.dataset.holds = String(x.holds);
  });

  $("actions-title").textContent = v.choosing_initial ? "Initial states" : `Enabled steps (${v.actions.length})`;
  const actions = $("actions");
  actions.replaceChildren();
  v.actions.forEach((a) => {
    const li = document.createElement("li");
    const b = document.createElement("button");
    b.textContent = a.label;
    b.dataset.testid = "action";
    b.addEventListener("click", () => move("step", a.index));
    li.appendChild(b);
    actions.appendChild(li);
  });

  const t = v.trace;
  $("trace-box").hidden = !t;
  if (t) {
    const where = t.position === null ? "off the trace" : `at step ${t.position} of ${t.length}`;
    $("trace-info").textContent = `${t.message || "a saved trace"} — ${where}`;
    const steps = $("trace-steps");
    steps.replaceChildren();
    t.steps.forEach((label, i) => {
      let cls = i === t.position ? "current" : "";
      if (i === t.length && ["invariant", "deadlock", "step"].includes((t.property || {}).kind)) cls += " violating";
      const li = item(steps, label + (t.loop === i ? "   ← loop" : ""), cls, () => move("follow", i));
      li.dataset.testid = "trace-step";
    });
    $("trace-next").disabled = t.position !== null && t.position >= t.length;
  }

  $("chart-box").hidden = !v.chart;
  $("chart").innerHTML = v.chart || "";
}

$("back").addEventListener("click", () => move("back"));
$("reset").addEventListener("click", () => move("reset"));
$("trace-next").addEventListener("click", () => {
  const t = view && view.trace;
  if (t) move("follow", t.position === null ? 0 : Math.min(t.position + 1, t.length));
});
$("trace-end").addEventListener("click", () => view && view.trace && move("follow", view.trace.length));
call("api/state");
