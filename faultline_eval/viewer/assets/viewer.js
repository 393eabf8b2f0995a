// faultline-eval viewer: the sortable, filterable sample table of a cell page (or of a page of
// several cells). Data come from window.FL_TABLES, one {cell, columns, rows, links} per cell, each
// pushed by a <script> file (works from file://, where fetch() of local files is blocked).
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
