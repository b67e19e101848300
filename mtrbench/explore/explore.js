// mtrbench explore: draws the page from its embedded JSON (#explore-data) with text nodes only, so no dataset
// or model text is ever parsed as HTML.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("explore-data").textContent);
  var app = document.getElementById("app");
  window.explore = data;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") { node.textContent = attrs[k]; } else if (attrs[k] !== null && attrs[k] !== undefined) {
        node.setAttribute(k, attrs[k]);
      }
    });
    (children || []).forEach(function (c) { if (c) { node.appendChild(c); } });
    return node;
  }
  function fmt(v) { return v === null || v === undefined ? "\u2014" : Number(v).toFixed(4); }
  function mean(values) {
    var xs = values.filter(function (v) { return v !== null && v !== undefined; });
    return xs.length ? xs.reduce(function (a, b) { return a + b; }, 0) / xs.length : null;
  }

  // ------------------------------------------------------------------ conversations list
  function listPage() {
    var systems = data.systems.map(function (s) { return s.name; });
    var state = {a: 0, b: Math.min(1, systems.length - 1), sort: null, ascending: true};
    app.appendChild(el("h1", {text: data.task + " \u00b7 conversations"}));
    app.appendChild(el("p", {"class": "meta", text: data.conversations.length + " conversations \u00b7 " +
      systems.length + " systems \u00b7 per-system mean of " + data.measure_label + " over a conversation's turns; " +
      "a turn's top-" + data.top_k + " is mostly unjudged when over half of it has no judgment"}));
    function select(id, chosen) {
      var s = el("select", {id: id});
      systems.forEach(function (name, i) {
        var o = el("option", {value: String(i), text: name});
        if (i === chosen) { o.selected = true; }
        s.appendChild(o);
      });
      return s;
    }
    var search = el("input", {type: "search", id: "search", placeholder: "search utterances or ids"});
    var selA = select("system-a", state.a), selB = select("system-b", state.b);
    var after = el("input", {type: "checkbox", id: "after-switch"});
    var delta = el("input", {type: "number", id: "delta", step: "0.05", min: "0", placeholder: "off"});
    var holes = el("input", {type: "checkbox", id: "unjudged"});
    app.appendChild(el("div", {"class": "controls"}, [
      el("label", {}, [el("span", {text: "find"}), search]),
      el("label", {}, [el("span", {text: "A"}), selA]),
      el("label", {}, [el("span", {text: "B"}), selB]),
      el("label", {}, [after, el("span", {text: "turns after a switch"})]),
      el("label", {}, [el("span", {text: "A loses to B by at least"}), delta]),
      el("label", {}, [holes, el("span", {text: "top-k mostly unjudged (A or B)"})])
    ]));
    var count = el("p", {id: "count", "class": "meta"});
    app.appendChild(count);
    var head = el("tr");
    // [key, header, numeric, css, first click]: a first click puts the weak end first, what a reader hunting
    // failures looks for: a system's lowest means, and for B - A the conversations where A loses most to B
    // (the largest B - A, as the filter "A loses to B by at least" reads); a second click reverses.
    var columns = [["id", "conversation", false, "id", "ascending"], ["turns", "turns", true, "count", "ascending"],
      ["switch", "switch at", true, "count", "ascending"]];
    systems.forEach(function (name, i) { columns.push(["mean" + i, name, true, "system", "ascending"]); });
    columns.push(["diff", "B \u2212 A", true, "diff", "descending"], ["matching", "matching turns", true, "turnlinks", "ascending"]);
    columns.forEach(function (c) {
      var th = el("th", {"class": "sortable " + c[3] + (c[2] ? " num" : ""), "data-key": c[0], text: c[1], tabindex: "0",
        title: c[3] === "system" ? c[1] : null});
      th.addEventListener("click", function () {
        state.ascending = state.sort === c[0] ? !state.ascending : c[4] === "ascending";
        state.sort = c[0];
        Array.prototype.forEach.call(head.cells, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", state.ascending ? "ascending" : "descending");
        draw();
      });
      head.appendChild(th);
    });
    var body = el("tbody");
    // Columns share the page's width (system names wrap in their headers); with many systems the table keeps
    // a floor per column and scrolls inside its box instead of squeezing numbers.
    var table = el("table", {id: "conversations", style: "min-width:" + (30 + 5 * systems.length) + "em"},
      [el("thead", {}, [head]), body]);
    app.appendChild(el("div", {"class": "scroll"}, [table]));

    function matching(c) {
      var d = delta.value === "" ? null : parseFloat(delta.value);
      var active = after.checked || d !== null || holes.checked;
      var turns = c.turns.filter(function (t) {
        if (after.checked && !t.after) { return false; }
        if (d !== null) {
          var a = t.s[state.a], b = t.s[state.b];
          if (a === null || b === null || b - a < d - 1e-12) { return false; }
        }
        if (holes.checked && !((t.u[state.a] || 0) > data.mostly_unjudged || (t.u[state.b] || 0) > data.mostly_unjudged)) {
          return false;
        }
        return true;
      });
      return {active: active, turns: turns};
    }
    function row(c) {
      var means = systems.map(function (_, i) { return mean(c.turns.map(function (t) { return t.s[i]; })); });
      var both = c.turns.filter(function (t) { return t.s[state.a] !== null && t.s[state.b] !== null; });
      var diff = both.length ? mean(both.map(function (t) { return t.s[state.b] - t.s[state.a]; })) : null;
      var m = matching(c);
      return {c: c, means: means, diff: diff, match: m};
    }
    function key(r, k) {
      if (k === "id") { return r.c.id; }
      if (k === "turns") { return r.c.turns.length; }
      if (k === "switch") { return r.c["switch"]; }
      if (k === "diff") { return r.diff; }
      if (k === "matching") { return r.match.turns.length; }
      return r.means[parseInt(k.slice(4), 10)];
    }
    function draw() {
      state.a = parseInt(selA.value, 10);
      state.b = parseInt(selB.value, 10);
      var needle = search.value.trim().toLowerCase();
      var rows = data.conversations.map(row).filter(function (r) {
        if (needle && (r.c.id + " " + r.c.text).toLowerCase().indexOf(needle) < 0) { return false; }
        return !r.match.active || r.match.turns.length > 0;
      });
      if (state.sort) {
        rows.sort(function (x, y) {
          var a = key(x, state.sort), b = key(y, state.sort);
          if (a === null || b === null) { return (a === null) - (b === null); }
          var order = typeof a === "string" ? a.localeCompare(b, undefined, {numeric: true}) : a - b;
          return state.ascending ? order : -order;
        });
      }
      body.textContent = "";
      var turnsShown = 0;
      rows.forEach(function (r) {
        var link = el("a", {href: "conversations/" + r.c.file, text: r.c.id});
        var tr = el("tr", {"data-id": r.c.id}, [el("td", {}, [link]), el("td", {"class": "num", text: String(r.c.turns.length)}),
          el("td", {"class": "num", text: r.c["switch"] === null ? "\u2014" : String(r.c["switch"])})]);
        r.means.forEach(function (v) { tr.appendChild(el("td", {"class": "num", text: fmt(v)})); });
        tr.appendChild(el("td", {"class": "num" + (r.diff > 0 ? " pos" : r.diff < 0 ? " neg" : ""), text: fmt(r.diff)}));
        var links = el("td", {"class": "turnlinks"});
        if (r.match.active) {
          r.match.turns.forEach(function (t) {
            links.appendChild(el("a", {href: "conversations/" + r.c.file + "#turn-" + t.t, text: String(t.t)}));
          });
          turnsShown += r.match.turns.length;
        } else {
          links.textContent = "all";
        }
        tr.appendChild(links);
        body.appendChild(tr);
      });
      count.textContent = rows.length + " of " + data.conversations.length + " conversations shown" +
        (rows.length && rows[0].match.active ? ", " + turnsShown + " matching turns" : "");
    }
    [search, delta].forEach(function (i) { i.addEventListener("input", draw); });
    [selA, selB, after, holes].forEach(function (i) { i.addEventListener("change", draw); });
    draw();
  }

  // ------------------------------------------------------------------ one conversation
  // A query is stored as a change of the same system's previous one (pages.pack_queries): unpack in turn order.
  function unpackQueries() {
    var previous = {};
    data.turns.forEach(function (turn) {
      turn.systems.forEach(function (s, n) {
        var q = s.query, whole = (previous[n] || "").slice(0, q.base) + q.add, cut = q.cut || [0, 0];
        s.query = {cut_before: whole.slice(0, cut[0]), kept: whole.slice(cut[0], whole.length - cut[1]),
                   cut_after: whole.slice(whole.length - cut[1]), note: q.note};
        previous[n] = whole;
      });
    });
  }
  // One part of a query (kept, or cut by truncation) with the turn's question marked where it is in it.
  function queryPart(tag, attrs, text, question) {
    var node = el(tag, attrs);
    var at = question ? text.lastIndexOf(question) : -1;
    if (at < 0) { node.textContent = text; return {node: node, found: false}; }
    node.appendChild(document.createTextNode(text.slice(0, at)));
    node.appendChild(el("span", {"class": "current", title: "this turn's question", text: question}));
    node.appendChild(document.createTextNode(text.slice(at + question.length)));
    return {node: node, found: true};
  }
  function queryBox(q, question) {
    var box = el("div", {"class": "query"});
    if (q.note && !q.kept) { box.appendChild(el("em", {text: q.note})); return box; }
    // the question is marked once: in the kept text where it is there, else where truncation cut it
    var kept = queryPart("span", {"class": "kept"}, q.kept || "", question);
    var after = queryPart("del", {title: "cut by truncation"}, q.cut_after || "", kept.found ? "" : question);
    var before = queryPart("del", {title: "cut by truncation"}, q.cut_before || "", kept.found || after.found ? "" : question);
    if (q.cut_before) { box.appendChild(before.node); }
    box.appendChild(kept.node);
    if (q.cut_after) { box.appendChild(after.node); }
    if (q.note) { box.appendChild(el("div", {"class": "muted", text: q.note})); }
    return box;
  }
  // A long query scrolls inside its box: show the turn's question (the end of a history-first query, the
  // start of a current-first one), with as much of what precedes it as fits above.
  function showQuestions() {
    Array.prototype.forEach.call(document.querySelectorAll(".query"), function (box) {
      var current = box.querySelector(".current");
      if (!current) { box.scrollTop = box.scrollHeight; return; }  // no question in it: the end, nearest the turn
      var top = current.offsetTop, bottom = top + current.offsetHeight;
      box.scrollTop = Math.min(top, Math.max(0, bottom - box.clientHeight));
    });
  }
  function answerBox(answer, anchor) {
    var box = el("div", {"class": "answer"});
    var text = el("p", {"class": "answer-text"});
    answer.text.split(/(\[\d+\])/).forEach(function (part) {
      var m = /^\[(\d+)\]$/.exec(part);
      var doc = m ? answer.passages[parseInt(m[1], 10) - 1] : undefined;
      if (doc !== undefined) {
        text.appendChild(el("a", {"class": "citation", href: "#" + anchor(doc), "data-doc": doc, text: part}));
      } else {
        text.appendChild(document.createTextNode(part));
      }
    });
    box.appendChild(el("strong", {text: "answer"}));
    box.appendChild(text);
    if (answer.verdict !== undefined) {
      var ok = answer.verdict === 1 || answer.verdict === true || String(answer.verdict).toUpperCase() === "CORRECT";
      box.appendChild(el("p", {"class": "verdict " + (ok ? "correct" : "incorrect"), "data-verdict": String(answer.verdict),
        text: "judge verdict: " + (ok ? "correct" : "incorrect")}));
    }
    if (answer.rating !== undefined) {
      box.appendChild(el("p", {"class": "rating", "data-rating": String(answer.rating), text: "judge rating: " + answer.rating}));
    }
    ["verdict_error", "rating_error"].forEach(function (k) {
      if (answer[k]) { box.appendChild(el("p", {"class": "muted", text: "judge failed: " + answer[k]})); }
    });
    if (answer.nuggets) {
      box.appendChild(el("p", {"class": "muted", text: "nuggets: " + JSON.stringify(answer.nuggets)}));
    }
    return box;
  }
  function topTable(turn, s, si) {
    var body = el("tbody");
    s.top.forEach(function (hit, i) {
      var doc = hit[0], passage = data.passages[doc] || ["", ""];
      var grade = Object.prototype.hasOwnProperty.call(turn.grades, doc) ? turn.grades[doc] : null;
      var snippet = el("td", {"class": "snippet"}, [el("span", {"class": "title", text: passage[0]}),
        el("span", {"class": "text", text: passage[1]}), el("span", {"class": "doc", text: " " + doc})]);
      body.appendChild(el("tr", {id: "p-" + turn.turn + "-" + si + "-" + i, "data-doc": doc,
        "class": grade > 0 ? "relevant" : null}, [
        el("td", {"class": "num rank", text: String(i + 1)}), el("td", {"class": "num score", text: hit[1].toFixed(4)}),
        snippet,
        grade === null ? el("td", {"class": "num hole", title: "unjudged (a hole in the qrels)", text: "?"})
                       : el("td", {"class": "num grade", text: String(grade)})
      ]));
    });
    var head = el("tr", {}, [el("th", {"class": "num", text: "#"}), el("th", {"class": "num", text: "score"}),
      el("th", {text: "passage"}), el("th", {"class": "num", text: "grade"})]);
    return el("div", {"class": "scroll"}, [el("table", {"class": "topk"}, [el("thead", {}, [head]), body])]);
  }
  function strip(turn) {
    var box = el("div", {"class": "strip", "aria-label": data.labels[data.measure] + " per system"});
    turn.systems.forEach(function (s, si) {
      var v = s.scores ? s.scores[data.measure] : null;
      box.appendChild(el("div", {"class": "bar"}, [el("span", {text: data.systems[si].name}),
        el("div", {"class": "track"}, [el("div", {"class": "fill", style: "width:" + (v === null || v === undefined ? 0 : Math.max(0, Math.min(1, v)) * 100) + "%"})]),
        el("span", {"class": "num", text: fmt(v)})]));
    });
    return box;
  }
  function systemBlock(turn, s, si) {
    var block = el("div", {"class": "system", "data-system": String(si)});
    block.appendChild(el("h3", {text: data.systems[si].name}));
    block.appendChild(queryBox(s.query || {}, turn.utterance));
    var rows = el("tbody");
    data.measures.forEach(function (k) {
      var v = s.scores ? s.scores[k] : undefined;
      rows.appendChild(el("tr", {}, [el("td", {text: data.labels[k]}),
        el("td", {"class": "num measure", "data-key": k, "data-value": v === undefined ? null : String(v), text: fmt(v)})]));
    });
    block.appendChild(el("table", {"class": "measures"}, [rows]));
    if (!s.scores) { block.appendChild(el("p", {"class": "muted", text: "not evaluated (no judged relevant passage)"})); }
    if (s.answer) {
      var anchor = function (doc) {
        var i = s.top.map(function (h) { return h[0]; }).indexOf(doc);
        return i < 0 ? "turn-" + turn.turn : "p-" + turn.turn + "-" + si + "-" + i;
      };
      block.appendChild(answerBox(s.answer, anchor));
    }
    block.appendChild(topTable(turn, s, si));
    return block;
  }
  function conversationPage() {
    unpackQueries();
    var pager = el("nav", {"class": "pager"}, [el("a", {href: "../index.html", text: "\u2190 all conversations"})]);
    if (data.previous) { pager.appendChild(el("a", {href: data.previous, text: "previous"})); }
    if (data.next) { pager.appendChild(el("a", {href: data.next, text: "next"})); }
    app.appendChild(pager);
    app.appendChild(el("h1", {text: data.conversation}));
    app.appendChild(el("p", {"class": "meta", text: data.task + " \u00b7 " + data.turns.length + " turns" +
      (data.switch_turn ? " \u00b7 topic switch before turn " + data.switch_turn : "") + " \u00b7 top-" + data.top_k +
      " per system; ? marks an unjudged passage; struck-out text was cut by truncation"}));
    data.turns.forEach(function (turn) {
      var section = el("section", {"class": "turn" + (turn.after_switch ? " after" : ""), id: "turn-" + turn.turn, "data-qid": turn.qid});
      var title = el("h2", {text: "Turn " + turn.turn + " "});
      if (turn.turn === data.switch_turn) { title.appendChild(el("span", {"class": "badge switch", text: "topic switch"})); }
      section.appendChild(title);
      section.appendChild(el("p", {"class": "utterance", text: turn.utterance}));
      if (turn.rewrite) { section.appendChild(el("p", {"class": "rewrite", text: "gold rewrite: " + turn.rewrite})); }
      section.appendChild(strip(turn));
      var grid = el("div", {"class": "systems"});
      turn.systems.forEach(function (s, si) { grid.appendChild(systemBlock(turn, s, si)); });
      section.appendChild(grid);
      app.appendChild(section);
    });
    showQuestions();
    window.addEventListener("resize", showQuestions);
  }

  if (data.kind === "list") { listPage(); } else { conversationPage(); }
})();
