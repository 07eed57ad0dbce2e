// codebox view: draws the batch table and the task pages from the JSON embedded in the page.
// Every string in that JSON may come from a hostile repository or model: it only ever reaches
// the page as text (createTextNode / textContent), never as markup; the CSP forbids innerHTML.
"use strict";

(function () {
  const DATA = JSON.parse(document.getElementById("codebox-data").textContent);
  const TASKS = DATA.tasks;
  const app = document.getElementById("app");
  const state = { query: "", status: "", reason: "", sortKey: null, sortDir: 1 };

  // --- building blocks ---------------------------------------------------------------------------

  // h("td", {class: "x"}, "text", child...): strings become text nodes, never markup.
  function h(tag, props, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") el.className = value;
      else if (key === "onclick") el.addEventListener("click", value);
      else if (key === "oninput") el.addEventListener("input", value);
      else if (key === "onchange") el.addEventListener("change", value);
      else el.setAttribute(key, String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  function taskHref(id) {
    return "#/task/" + encodeURIComponent(id);
  }

  function seconds(s) {
    if (s === null || s === undefined) return "–";
    if (s < 10) return s.toFixed(2) + " s";
    if (s < 60) return s.toFixed(1) + " s";
    const m = Math.floor(s / 60);
    const rest = Math.round(s - 60 * m);
    return m + "m " + String(rest).padStart(2, "0") + "s";
  }

  function count(n) {
    return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US");
  }

  function when(t) {
    return t ? new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "–";
  }

  function badge(value, kind) {
    return h("span", { class: "badge " + kind + "-" + String(value).replace(/[^a-z_]/gi, "") }, value || "–");
  }

  function patchSize(task) {
    return task.patch ? task.patch.added + task.patch.removed : null;
  }

  function testOutcome(task) {
    return task.test ? task.test.outcome : "";
  }

  function warnings(list) {
    if (!list || !list.length) return null;
    return h("ul", { class: "warnings" }, list.map((w) => h("li", {}, w)));
  }

  // --- the batch page ----------------------------------------------------------------------------

  const COLUMNS = [
    { key: "id", label: "task", value: (t) => t.id },
    { key: "status", label: "status", value: (t) => t.status },
    { key: "stop_reason", label: "stop reason", value: (t) => t.stop_reason },
    { key: "steps", label: "steps", value: (t) => t.steps, num: true },
    { key: "tool_calls", label: "tool calls", value: (t) => t.tool_calls, num: true },
    { key: "test", label: "tests", value: testOutcome },
    { key: "duration_s", label: "duration", value: (t) => t.duration_s, num: true },
    { key: "patch", label: "patch", value: patchSize, num: true },
    { key: "tokens", label: "tokens", value: (t) => t.total_tokens, num: true },
    { key: "error", label: "error", value: taskError },
  ];

  // Why the last test run did not pass: its failing tests, else its error (the console's table says the same).
  function testReason(test) {
    if (!test || test.outcome === "ok") return "";
    if (test.failing.length) return test.failing.length + " failing: " + test.failing.slice(0, 3).join(", ") + (test.failing.length > 3 ? ", …" : "");
    return test.error;
  }

  // A task's error: the report's own, else why its last test run did not pass.
  function taskError(task) {
    if (task.error) return task.error;
    const reason = testReason(task.test);
    return reason ? "last test " + task.test.outcome + ": " + reason : "";
  }

  // A task's error in a table cell: its first line, shortened; the whole text on hover.
  function errorCell(task) {
    const error = taskError(task);
    if (!error) return h("td", { class: "error-cell muted" }, "–");
    const first = error.split("\n")[0];
    const shown = first.length > 120 ? first.slice(0, 119) + "…" : first;
    const kind = task.status === "error" ? "error-cell bad" : "error-cell warn";
    return h("td", { class: kind, title: error }, shown);
  }

  function visibleTasks() {
    const q = state.query.toLowerCase();
    let rows = TASKS.filter(
      (t) =>
        (!state.status || t.status === state.status) &&
        (!state.reason || t.stop_reason === state.reason) &&
        (!q || [t.id, t.goal, taskError(t), t.stop_reason].some((s) => s.toLowerCase().includes(q)))
    );
    const column = COLUMNS.find((c) => c.key === state.sortKey);
    if (column) {
      const cmp = (a, b) => {
        const x = column.value(a);
        const y = column.value(b);
        if (x === y) return 0;
        if (x === null || x === undefined || x === "") return 1; // blanks last, either way
        if (y === null || y === undefined || y === "") return -1;
        return (column.num ? x - y : String(x).localeCompare(String(y))) * state.sortDir;
      };
      rows = rows.slice().sort(cmp);
    }
    return rows;
  }

  function cell(task, key) {
    switch (key) {
      case "id":
        return h("td", { class: "task" }, h("a", { href: taskHref(task.id) }, task.id), h("div", { class: "goal" }, task.goal));
      case "status":
        return h("td", {}, badge(task.status, "status"));
      case "test":
        return h("td", testReason(task.test) ? { title: testReason(task.test) } : {}, task.test ? badge(task.test.outcome, "test") : "–");
      case "duration_s":
        return h("td", { class: "num" }, seconds(task.duration_s));
      case "patch":
        return h(
          "td",
          { class: "num" },
          task.patch ? [h("span", { class: "plus" }, "+" + task.patch.added), " ", h("span", { class: "minus" }, "−" + task.patch.removed)] : "–"
        );
      case "tokens":
        return h("td", { class: "num" }, count(task.total_tokens));
      case "error":
        return errorCell(task);
      case "steps":
      case "tool_calls":
        return h("td", { class: "num" }, count(task[key]));
      default:
        return h("td", {}, task[key] || "–");
    }
  }

  function tableBody() {
    const rows = visibleTasks();
    document.getElementById("shown").textContent = rows.length + " of " + TASKS.length + " tasks";
    const body = h("tbody", {}, rows.map((t) => h("tr", { "data-task": t.id }, COLUMNS.map((c) => cell(t, c.key)))));
    document.getElementById("tasks").querySelector("tbody").replaceWith(body);
  }

  function sortBy(key) {
    state.sortDir = state.sortKey === key ? -state.sortDir : 1;
    state.sortKey = key;
    for (const th of document.querySelectorAll("#tasks th")) {
      const on = th.dataset.key === state.sortKey;
      th.setAttribute("aria-sort", on ? (state.sortDir > 0 ? "ascending" : "descending") : "none");
    }
    tableBody();
  }

  function choices(id, label, values, current, onchange) {
    const distinct = Array.from(new Set(values.filter((v) => v))).sort();
    const select = h(
      "select",
      { id: id, onchange: onchange },
      h("option", { value: "" }, "all"),
      distinct.map((v) => h("option", { value: v }, v))
    );
    select.value = current;
    return h("label", {}, label + " ", select);
  }

  function summaryCards(t) {
    const card = (label, value, kind) => h("div", { class: "card " + (kind || "") }, h("div", { class: "value" }, value), h("div", { class: "label" }, label));
    return h(
      "div",
      { class: "cards", id: "summary" },
      card("tasks", count(t.tasks)),
      card("completed", count(t.completed), "ok"),
      card("failed (stopped)", count(t.failed), t.failed ? "warn" : ""),
      card("error", count(t.error), t.error ? "bad" : ""),
      card("last test passed", count(t.tests_ok)),
      t.tests_not_passing ? card("completed, tests not passing", count(t.tests_not_passing), "warn") : null,
      card("tokens", count(t.tokens)),
      t.cost !== null ? card("cost", "$" + t.cost.toFixed(4)) : null,
      card("task time (sum)", seconds(t.task_time_s)),
      card("wall time", seconds(t.wall_time_s))
    );
  }

  function batchPage() {
    const filter = h("input", {
      id: "filter",
      type: "search",
      placeholder: "filter: task id, goal, error…",
      oninput: (e) => {
        state.query = e.target.value;
        tableBody();
      },
    });
    filter.value = state.query;
    const head = h(
      "tr",
      {},
      COLUMNS.map((c) =>
        h(
          "th",
          { "data-key": c.key, class: c.num ? "num" : "", "aria-sort": state.sortKey === c.key ? (state.sortDir > 0 ? "ascending" : "descending") : "none" },
          h("button", { type: "button", onclick: () => sortBy(c.key) }, c.label)
        )
      )
    );
    return [
      h("header", {}, h("h1", {}, "codebox · ", DATA.title), h("div", { class: "muted" }, DATA.source, " · viewed ", when(DATA.generated_at))),
      warnings(DATA.warnings),
      summaryCards(DATA.totals),
      h(
        "div",
        { class: "filters" },
        filter,
        choices("status-filter", "status", TASKS.map((t) => t.status), state.status, (e) => {
          state.status = e.target.value;
          tableBody();
        }),
        choices("reason-filter", "stop reason", TASKS.map((t) => t.stop_reason), state.reason, (e) => {
          state.reason = e.target.value;
          tableBody();
        }),
        h("span", { id: "shown", class: "muted" })
      ),
      h("table", { id: "tasks" }, h("thead", {}, head), h("tbody", {})),
    ];
  }

  // --- the task page -----------------------------------------------------------------------------

  function section(title, id, ...body) {
    return h("section", { id: id }, h("h2", {}, title), body);
  }

  function facts(pairs) {
    return h(
      "dl",
      { class: "facts" },
      pairs.filter((p) => p[1] !== null && p[1] !== undefined && p[1] !== "").map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])
    );
  }

  function callId(index) {
    return "call-" + index;
  }

  function timelineChart(task) {
    const steps = task.timeline;
    let total = task.duration_s || 0;
    for (const step of steps) {
      total = Math.max(total, step.start_s + step.model_s);
      for (const call of step.calls) total = Math.max(total, (call.start_s || 0) + call.duration_s);
    }
    if (!steps.length || total <= 0 || steps.every((s) => s.calls.every((c) => c.start_s === null) && !s.model_s)) {
      return h("p", { class: "muted" }, "no event times: no timeline to draw");
    }
    const pct = (v) => Math.max(0, Math.min(100, (100 * v) / total)) + "%";
    const bar = (kind, start, length, label, target) => {
      const el = h("span", { class: "bar " + kind, title: label });
      el.style.left = pct(start);
      el.style.width = "max(2px, " + pct(length) + ")";
      if (target) {
        el.addEventListener("click", () => openCall(target));
      }
      return el;
    };
    let index = 0;
    const rows = steps.map((step) => {
      const bars = [bar("model", step.start_s, step.model_s, "step " + step.number + ": model " + seconds(step.model_s))];
      for (const call of step.calls) {
        const id = callId(index++);
        if (call.start_s !== null) {
          bars.push(bar("tool" + (call.is_error ? " error" : ""), call.start_s, call.duration_s, call.name + " " + seconds(call.duration_s), id));
        }
      }
      return h(
        "div",
        { class: "trow" },
        h("span", { class: "tlabel" }, "step " + step.number),
        h("span", { class: "track" }, bars),
        h("span", { class: "tnum" }, seconds(step.model_s), " + ", seconds(step.tool_s))
      );
    });
    return h(
      "div",
      { class: "timeline" },
      h("div", { class: "legend" }, h("span", { class: "bar model key" }), " model ", h("span", { class: "bar tool key" }), " tool ", h("span", { class: "bar tool error key" }), " tool error ", h("span", { class: "muted" }, "· 0 – " + seconds(total))),
      rows
    );
  }

  function openCall(id) {
    const el = document.getElementById(id);
    if (el) {
      el.open = true;
      el.scrollIntoView({ block: "center" });
    }
  }

  function callView(call, id) {
    const decision = call.decision === "allow" ? null : badge(call.decision, "decision");
    return h(
      "details",
      { class: "call" + (call.is_error ? " error" : ""), id: id },
      h(
        "summary",
        {},
        h("span", { class: "tool" }, call.name),
        " ",
        h("span", { class: "muted" }, call.summary),
        " ",
        decision,
        " ",
        call.finished ? badge(call.outcome || "ok", "outcome") : badge("running", "outcome"),
        h("span", { class: "dur" }, seconds(call.duration_s))
      ),
      h("h4", {}, "arguments"),
      h("pre", { class: "args" }, call.arguments),
      call.reason || call.write_paths.length
        ? [h("h4", {}, "policy"), facts([["decision", call.decision], ["reason", call.reason], ["writes", call.write_paths.join(", ")]])]
        : null,
      h("h4", {}, "result, as the model saw it"),
      h("pre", { class: "result" }, call.content)
    );
  }

  function stepsView(task) {
    let index = 0;
    return task.timeline.map((step) =>
      h(
        "div",
        { class: "step" },
        h("h3", {}, step.number ? "step " + step.number : "tool calls (from the report)", h("span", { class: "muted" }, " · model " + seconds(step.model_s) + " · tools " + seconds(step.tool_s))),
        step.notes.map((n) => h("div", { class: "note" }, n)),
        step.messages.map((m) => h("pre", { class: "message" + (step.final ? " final" : "") }, m)),
        step.calls.map((call) => callView(call, callId(index++)))
      )
    );
  }

  function diffView(patch) {
    const pre = h("pre", { class: "diff" });
    for (const [kind, text] of patch.lines) pre.append(h("span", { class: "d-" + kind }, text));
    return [
      h(
        "p",
        {},
        patch.files.length + " file(s) · ",
        h("span", { class: "plus" }, "+" + patch.added),
        " ",
        h("span", { class: "minus" }, "−" + patch.removed),
        patch.source ? h("span", { class: "muted" }, " · from " + patch.source) : null
      ),
      h("ul", { class: "files" }, patch.files.map((f) => h("li", {}, f))),
      patch.lines.length ? pre : h("p", { class: "muted" }, "no diff text (only its summary is known)"),
    ];
  }

  function testView(test) {
    return [
      facts([
        ["command", test.command || (test.chosen ? "none" : "")],
        ["chosen", test.chosen],
        ["outcome", badge(test.outcome, "test")],
        ["why", test.error],
        ["exit code", test.exit_code === null ? "" : String(test.exit_code)],
        ["duration", seconds(test.duration_s)],
      ]),
      test.failing.length ? [h("h4", {}, "failing tests"), h("ul", { class: "failing" }, test.failing.map((t) => h("li", {}, t)))] : null,
      test.output ? h("details", { class: "output" }, h("summary", {}, "output"), h("pre", {}, test.output)) : null,
    ];
  }

  function neighbours(task) {
    const i = TASKS.indexOf(task);
    const prev = TASKS[i - 1];
    const next = TASKS[i + 1];
    return h(
      "nav",
      {},
      h("a", { href: "#/", id: "back" }, "← all tasks"),
      prev ? h("a", { href: taskHref(prev.id), class: "prev" }, "‹ " + prev.id) : null,
      next ? h("a", { href: taskHref(next.id), class: "next" }, next.id + " ›") : null
    );
  }

  function taskPage(task) {
    const tokens = task.total_tokens === null ? null : count(task.total_tokens) + " (" + count(task.input_tokens) + " in, " + count(task.output_tokens) + " out)";
    return [
      TASKS.length > 1 || DATA.kind === "batch" ? neighbours(task) : null,
      h("header", {}, h("h1", {}, task.id, " ", badge(task.status, "status")), h("div", { class: "muted" }, DATA.source)),
      facts([
        ["stop reason", task.stop_reason],
        ["model", task.model],
        ["repo", task.repo],
        ["started", when(task.started_at)],
        ["duration", seconds(task.duration_s)],
        ["steps", count(task.steps)],
        ["tool calls", count(task.tool_calls)],
        ["tokens", tokens],
        ["cost", task.cost === null ? null : "$" + task.cost.toFixed(4)],
        ["files changed", task.files_changed.join(", ")],
      ]),
      warnings(task.warnings),
      task.error
        ? h("div", { class: "error-box " + (task.status === "error" ? "error" : "stopped") }, h("h4", {}, task.status === "error" ? "error" : "why it stopped"), h("pre", { id: "error" }, task.error))
        : null,
      section("goal", "goal", h("pre", { class: "goal-text" }, task.goal)),
      section("timeline", "timeline", timelineChart(task)),
      section("steps", "steps", task.timeline.length ? stepsView(task) : h("p", { class: "muted" }, "no steps")),
      section("final message", "final", task.final_message === null ? h("p", { class: "muted" }, "none") : h("pre", { class: "message final" }, task.final_message)),
      task.test ? section("last test", "test", testView(task.test)) : null,
      task.patch ? section("diff", "diff", diffView(task.patch)) : null,
      Object.keys(task.environment).length
        ? section("environment", "environment", h("table", { class: "env" }, Object.entries(task.environment).map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v)))))
        : null,
    ];
  }

  // --- routing -----------------------------------------------------------------------------------

  function route() {
    const hash = location.hash;
    let page;
    let name = "task";
    if (hash.startsWith("#/task/")) {
      let id = null;
      try {
        id = decodeURIComponent(hash.slice(7));
      } catch (e) {
        id = null;
      }
      const task = TASKS.find((t) => t.id === id);
      page = task ? taskPage(task) : [h("p", {}, "no such task"), h("a", { href: "#/" }, "← all tasks")];
      document.title = "codebox · " + (task ? task.id : DATA.title);
    } else if (DATA.kind === "run" && TASKS.length === 1) {
      page = taskPage(TASKS[0]);
      document.title = "codebox · " + TASKS[0].id;
    } else {
      page = batchPage();
      name = "index";
      document.title = "codebox · " + DATA.title;
    }
    app.replaceChildren(h("main", { "data-page": name }, page));
    if (document.getElementById("tasks")) tableBody();
    window.scrollTo(0, 0);
  }

  window.addEventListener("hashchange", route);
  route();
})();
