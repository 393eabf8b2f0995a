// faultline-eval viewer, four parts (no server: everything works from file://):
// 1. the sortable, filterable sample table of a cell page (or of a page of several cells), with its
//    "N of M shown" header, the "only not correct" and "failures first" controls and the sample x variant grid. Data come from window.FL_TABLES, one {cell, columns, rows, links} per cell,
//    each pushed by a <script> file (fetch() of local files is blocked under file://);
// 2. keys: left/right arrows follow the page's previous/next link (sample or cell), j/k the next/previous
//    section of a sample page (on a cell page: the next/previous cell);
// 3. the expand/collapse-all buttons of a sample page;
// 4. the search box of the top bar over the site's index (search.js, loaded on first use).
(function () {
  "use strict";
  var tables = window.FL_TABLES || [], table = document.getElementById("samples");
  if (!tables.length || !table) return;
  // a page of several cells gets a first column naming each trial's cell
  var cellColumn = table.dataset.cellColumn;
  var data = {columns: (cellColumn ? [cellColumn] : []).concat(tables[0].columns), rows: [], links: []};
  tables.forEach(function (t) {
    t.rows.forEach(function (row, i) {
      data.rows.push(cellColumn ? [t.cell].concat(row) : row);
      data.links.push(t.links[i]);
    });
  });
  var filters = {}, sortColumn = -1, sortDescending = false;
  // from the address: #model=...&verdict=... (a leading ! negates, a leading = matches whole; a|b: either)
  var wanted = {};
  location.hash.replace(/^#/, "").split("&").forEach(function (part) {
    var at = part.indexOf("=");
    if (at > 0) wanted[decodeURIComponent(part.slice(0, at))] = decodeURIComponent(part.slice(at + 1));
  });

  function text(v) { return v === null || v === undefined ? "" : String(v); }
  function matches(value, filter) {
    if (!filter) return true;
    if (filter.indexOf("|") >= 0) return filter.split("|").some(function (f) { return matches(value, f); });
    if (filter.charAt(0) === "!") return text(value) !== filter.slice(1);
    if (filter.charAt(0) === "=") return text(value) === filter.slice(1);
    return text(value).toLowerCase().indexOf(filter.toLowerCase()) >= 0;
  }

  var box = document.getElementById("filters");
  data.columns.forEach(function (name, i) {
    var label = document.createElement("label"), input = document.createElement("input");
    label.textContent = name + " ";
    input.type = "search";
    input.dataset.column = name;
    input.value = wanted[name] || "";
    filters[i] = input.value;
    input.addEventListener("input", function () { filters[i] = input.value; draw(); });
    label.appendChild(input);
    box.appendChild(label);
  });

  // "only not correct" sets the verdict filter (as #verdict=!correct does); "failures first" puts
  // the trials not correct first (then the column sort), and the grid's samples by their failures
  var verdictColumn = data.columns.indexOf("verdict"), onlyWrong = document.getElementById("only-wrong");
  var failuresFirst = document.getElementById("failures-first");
  var verdictInput = box.querySelector('input[data-column="verdict"]');
  if (onlyWrong && verdictInput) {
    onlyWrong.checked = verdictInput.value === "!correct";
    onlyWrong.addEventListener("change", function () {
      verdictInput.value = onlyWrong.checked ? "!correct" : "";
      filters[verdictColumn] = verdictInput.value;
      draw();
    });
    verdictInput.addEventListener("input", function () { onlyWrong.checked = verdictInput.value === "!correct"; });
  }
  if (failuresFirst) failuresFirst.addEventListener("change", function () { draw(); });
  function failed(i) { return data.rows[i][verdictColumn] === "correct" ? 0 : 1; }

  function draw() {
    var order = data.rows.map(function (_, i) { return i; }).filter(function (i) {
      return data.columns.every(function (_, c) { return matches(data.rows[i][c], filters[c]); });
    });
    var first = failuresFirst && failuresFirst.checked;
    if (sortColumn >= 0 || first) {
      order.sort(function (a, b) {
        if (first && failed(a) !== failed(b)) return failed(b) - failed(a);
        if (sortColumn < 0) return a - b;
        var x = data.rows[a][sortColumn], y = data.rows[b][sortColumn], r;
        if (typeof x === "number" && typeof y === "number") r = x - y;
        else r = text(x).localeCompare(text(y), undefined, {numeric: true});
        return sortDescending ? -r : r;
      });
    }
    drawGrid(order, first);
    var head = "<thead><tr>" + data.columns.map(function (name, c) {
      var mark = c === sortColumn ? (sortDescending ? " \u25bc" : " \u25b2") : "";
      return '<th data-column="' + c + '">' + name + mark + "</th>";
    }).join("") + "</tr></thead>";
    var sample = data.columns.indexOf("sample_id"), verdict = data.columns.indexOf("verdict");
    var body = order.map(function (i) {
      var row = data.rows[i], cls = row[verdict] === "correct" ? "ok" : row[verdict] === "wrong" ? "bad" : "odd";
      return '<tr class="' + cls + '">' + row.map(function (v, c) {
        var shown = text(v).replace(/&/g, "&amp;").replace(/</g, "&lt;");
        if (c === sample && data.links[i]) shown = '<a href="' + data.links[i] + '">' + shown + "</a>";
        return "<td>" + shown + "</td>";
      }).join("") + "</tr>";
    }).join("");
    table.innerHTML = head + "<tbody>" + body + "</tbody>";
    table.dataset.shown = String(order.length);
    var count = document.getElementById("shown-count");
    if (count) count.textContent = order.length + " of " + data.rows.length + " trial(s) shown";
    Array.prototype.forEach.call(table.querySelectorAll("th"), function (th) {
      th.addEventListener("click", function () {
        var c = Number(th.dataset.column);
        sortDescending = c === sortColumn ? !sortDescending : false;
        sortColumn = c;
        draw();
      });
    });
  }
  // the sample x variant grid: one row per sample, one column per model and variant, each mark
  // opening its trial (its sample page, or for a trial without one its row of this table)
  function drawGrid(order, first) {
    var grid = document.getElementById("grid");
    if (!grid) return;
    var model = data.columns.indexOf("model"), sample = data.columns.indexOf("sample_id"), variant = sample + 1;
    var columns = [], samples = [], marks = {}, failures = {};
    order.forEach(function (i) {
      var row = data.rows[i], column = text(row[model]) + " \u00b7 " + text(row[variant]);
      var id = text(row[sample]);
      if (columns.indexOf(column) < 0) columns.push(column);
      if (!(id in marks)) { samples.push(id); marks[id] = {}; failures[id] = 0; }
      marks[id][column] = i;
      failures[id] += failed(i);
    });
    columns.sort(function (a, b) { return a.localeCompare(b, undefined, {numeric: true}); });
    if (first) samples.sort(function (a, b) { return failures[b] - failures[a]; });
    var escape = function (v) { return text(v).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;"); };
    var head = "<thead><tr><th>sample</th>" + columns.map(function (c) { return "<th>" + escape(c) + "</th>"; }).join("") +
      "</tr></thead>";
    var body = samples.map(function (id) {
      return "<tr><th>" + escape(id) + "</th>" + columns.map(function (c) {
        var i = marks[id][c];
        if (i === undefined) return "<td></td>";
        var v = data.rows[i][verdictColumn], cls = v === "correct" ? "ok" : v === "wrong" ? "bad" : "odd";
        var mark = v === "correct" ? "\u2713" : v === "wrong" ? "\u2717" : "?";
        var href = data.links[i] || "#sample_id=" + encodeURIComponent("=" + id) + "&model=" +
          encodeURIComponent("=" + text(data.rows[i][model]));
        return '<td class="' + cls + '"><a href="' + escape(href) + '" title="' + escape(c + ": " + v) + '">' + mark +
          "</a></td>";
      }).join("") + "</tr>";
    }).join("");
    grid.innerHTML = head + "<tbody>" + body + "</tbody>";
    grid.dataset.samples = String(samples.length);
  }
  draw();
  // a link to a row of this table (#sample_id=...&model=...) from the grid: the filters follow the address
  window.addEventListener("hashchange", function () {
    var now = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var at = part.indexOf("=");
      if (at > 0) now[decodeURIComponent(part.slice(0, at))] = decodeURIComponent(part.slice(at + 1));
    });
    Array.prototype.forEach.call(box.querySelectorAll("input"), function (input) {
      input.value = now[input.dataset.column] || "";
      filters[data.columns.indexOf(input.dataset.column)] = input.value;
    });
    if (onlyWrong && verdictInput) onlyWrong.checked = verdictInput.value === "!correct";
    draw();
  });
})();

(function () {
  "use strict";
  function typing(event) {
    var t = event.target;
    return event.altKey || event.ctrlKey || event.metaKey || (t && /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
  }
  function follow(rel) {
    var link = document.querySelector('.pager a[rel="' + rel + '"]');
    if (link) location.href = link.href;
  }
  function step(direction) {  // the next (1) or previous (-1) trial section of a sample page
    var sections = Array.prototype.slice.call(document.querySelectorAll("section.trial"));
    if (!sections.length) return follow(direction > 0 ? "next" : "prev");
    // from the section the address names (the last one stepped to), else from the top of the view
    var named = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    var at = sections.indexOf(named), target;
    if (at >= 0) target = sections[at + direction];
    else {
      var top = window.scrollY + 2;
      sections.forEach(function (s) {
        var y = s.getBoundingClientRect().top + window.scrollY;
        if (direction > 0 && y > top && !target) target = s;
        if (direction < 0 && y < top - 1) target = s;
      });
    }
    if (!target) return;
    var details = target.querySelector("details");
    if (details) details.open = true;
    target.scrollIntoView();
    if (history.replaceState) history.replaceState(null, "", "#" + target.id);
  }
  document.addEventListener("keydown", function (event) {
    if (typing(event)) return;
    if (event.key === "ArrowLeft") follow("prev");
    else if (event.key === "ArrowRight") follow("next");
    else if (event.key === "j") step(1);
    else if (event.key === "k") step(-1);
  });
  Array.prototype.forEach.call(document.querySelectorAll("button[data-fold]"), function (button) {
    button.addEventListener("click", function () {
      var open = button.dataset.fold === "open";
      Array.prototype.forEach.call(document.querySelectorAll("section.trial > details"), function (d) { d.open = open; });
    });
  });
  // a link to a section opens it
  function openTarget() {
    var target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    var details = target && target.querySelector("details");
    if (details) details.open = true;
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();

(function () {
  "use strict";
  var box = document.getElementById("fl-search"), list = document.getElementById("fl-results");
  var count = document.getElementById("fl-search-count");
  if (!box || !list) return;
  var root = document.body.dataset.root || "", loading = false, SHOWN = 50;
  function escape(s) { return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;"); }
  var waiting = [];
  function load(then) {  // then() once the index is loaded (the last call's: an earlier query is stale)
    if (window.FL_SEARCH) return then();
    waiting = [then];
    if (loading) return;
    loading = true;
    var script = document.createElement("script");
    script.src = root + "search.js";
    script.onload = function () { waiting.forEach(function (f) { f(); }); };
    script.onerror = function () { count.textContent = "no search index (search.js) beside the site"; };
    document.head.appendChild(script);
  }
  function snippet(text, words) {  // the text around the first word found in it
    var at = -1;
    words.some(function (w) { at = text.toLowerCase().indexOf(w); return at >= 0; });
    var from = Math.max(0, at - 50);
    return (from ? "\u2026" : "") + text.slice(from, from + 140);
  }
  function search() {
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    if (!words.length) { list.hidden = true; count.textContent = ""; box.dataset.count = ""; return; }
    load(function () {
      var rows = window.FL_SEARCH.rows, found = [];
      rows.forEach(function (r) {
        var hay = (r[2] + " " + r[3] + " " + r[4] + " " + r[5]).toLowerCase();
        if (words.every(function (w) { return hay.indexOf(w) >= 0; })) found.push(r);
      });
      // samples first (a question or an id), then trials
      found.sort(function (a, b) { return (a[1] === "sample" ? 0 : 1) - (b[1] === "sample" ? 0 : 1); });
      box.dataset.count = String(found.length);
      count.textContent = found.length ? (Math.min(found.length, SHOWN) + " of " + found.length + " shown") : "no match";
      list.innerHTML = found.slice(0, SHOWN).map(function (r) {
        // a trial: its sample, condition, variant, model and verdict (three variants look alike otherwise)
        var where = r[1] === "sample" ? "sample " + r[2] :
          r[2] + " \u00b7 " + r[3] + " \u00b7 variant " + r[7] + " \u00b7 " + r[4];
        var verdict = r[1] === "sample" ? "" : ' <span class="verdict ' +
          (r[8] === "correct" ? "ok" : r[8] === "wrong" ? "bad" : "odd") + '">' + escape(r[8]) + "</span>";
        return '<li><a href="' + escape(root + r[6]) + '"><b>' + escape(r[0]) + "</b> " + escape(where) +
          "</a>" + verdict + ' <span class="muted">' + escape(snippet(String(r[5]), words)) + "</span></li>";
      }).join("");
      list.hidden = !found.length;
    });
  }
  box.addEventListener("input", search);
  box.addEventListener("focus", function () { load(function () {}); });
  box.addEventListener("keydown", function (event) {
    if (event.key === "Enter") { var first = list.querySelector("a"); if (first) location.href = first.href; }
    if (event.key === "Escape") { box.value = ""; search(); box.blur(); }
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "/" && document.activeElement !== box && !/^(INPUT|TEXTAREA)$/.test(event.target.tagName)) {
      event.preventDefault();
      box.focus();
    }
  });
})();
