// faultline-eval viewer, four parts (no server: everything works from file://):
// 1. the sortable, filterable sample table of a cell page (or of a page of several cells), with its
//    "N of M shown" header. Data come from window.FL_TABLES, one {cell, columns, rows, links} per cell,
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

  function draw() {
    var order = data.rows.map(function (_, i) { return i; }).filter(function (i) {
      return data.columns.every(function (_, c) { return matches(data.rows[i][c], filters[c]); });
    });
    if (sortColumn >= 0) {
      order.sort(function (a, b) {
        var x = data.rows[a][sortColumn], y = data.rows[b][sortColumn], r;
        if (typeof x === "number" && typeof y === "number") r = x - y;
        else r = text(x).localeCompare(text(y), undefined, {numeric: true});
        return sortDescending ? -r : r;
      });
    }
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
  draw();
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
        var where = r[1] === "sample" ? "sample " + r[2] : r[2] + " · " + r[3] + " · " + r[4];
        return '<li><a href="' + escape(root + r[6]) + '"><b>' + escape(r[0]) + "</b> " + escape(where) +
          '</a> <span class="muted">' + escape(snippet(String(r[5]), words)) + "</span></li>";
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
