// faultline-eval viewer: the trial pairs of a compare page (faultline_app/viewer/compare.py).
// Data: window.FL_COMPARE = {a, b, columns, pairs: {key: label}, rows: [[...columns, pair, link]]}.
// Filters come from the controls or the address: #pair=a_only&cell=...&sample=... (a leading = matches
// whole, else within); "N of M shown" says what the filters leave.
(function () {
  "use strict";
  var data = window.FL_COMPARE, table = document.getElementById("compare");
  if (!data || !table) return;
  var n = data.columns.length, box = document.getElementById("compare-filters");
  var count = document.getElementById("compare-count");
  function text(v) { return v === null || v === undefined ? "" : String(v); }
  function escaped(v) { return text(v).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;"); }
  function matches(value, filter) {
    if (!filter) return true;
    if (filter.charAt(0) === "=") return text(value) === filter.slice(1);
    return text(value).toLowerCase().indexOf(filter.toLowerCase()) >= 0;
  }

  function select(name, options) {
    var label = document.createElement("label"), input = document.createElement("select");
    label.textContent = name + " ";
    label.style.marginRight = "1em";
    options.forEach(function (o) {
      var option = document.createElement("option");
      option.value = o[0];
      option.textContent = o[1];
      input.appendChild(option);
    });
    label.appendChild(input);
    box.appendChild(label);
    return input;
  }
  var pairs = [["", "all pairs"]].concat(Object.keys(data.pairs).map(function (k) { return [k, data.pairs[k]]; }));
  var cells = [];
  data.rows.forEach(function (r) { if (cells.indexOf(r[0]) < 0) cells.push(r[0]); });
  var pairInput = select("which", pairs);
  var cellInput = select(data.columns[0], [["", "all"]].concat(cells.map(function (c) { return ["=" + c, c]; })));
  var sampleLabel = document.createElement("label"), sampleInput = document.createElement("input");
  sampleLabel.textContent = "sample ";
  sampleLabel.style.marginRight = "1em";
  sampleInput.type = "search";
  sampleLabel.appendChild(sampleInput);
  box.appendChild(sampleLabel);

  function fromAddress() {
    var wanted = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var at = part.indexOf("=");
      if (at > 0) wanted[decodeURIComponent(part.slice(0, at))] = decodeURIComponent(part.slice(at + 1));
    });
    pairInput.value = data.pairs[wanted.pair] ? wanted.pair : "";
    var cell = wanted.cell ? (wanted.cell.charAt(0) === "=" ? wanted.cell : "=" + wanted.cell) : "";
    cellInput.value = cells.indexOf(cell.slice(1)) >= 0 ? cell : "";
    sampleInput.value = wanted.sample || "";
    draw();
  }

  function draw() {
    var shown = data.rows.filter(function (r) {
      return (!pairInput.value || r[n] === pairInput.value) && matches(r[0], cellInput.value) &&
        matches(r[1], sampleInput.value);
    });
    var head = "<thead><tr>" + data.columns.map(function (c) { return "<th>" + escaped(c) + "</th>"; }).join("") +
      "</tr></thead>";
    var body = shown.map(function (r) {
      var cls = r[n] === "a_only" ? "ok" : r[n] === "b_only" ? "bad" : r[n] === "unpaired" ? "odd" : "";
      return '<tr class="' + cls + '" data-pair="' + r[n] + '">' + r.slice(0, n).map(function (v, c) {
        var cell = escaped(v);
        if (c === 1 && r[n + 1]) cell = '<a href="' + escaped(r[n + 1]) + '">' + cell + "</a>";
        return "<td>" + cell + "</td>";
      }).join("") + "</tr>";
    }).join("");
    table.innerHTML = head + "<tbody>" + body + "</tbody>";
    table.dataset.shown = String(shown.length);
    count.textContent = shown.length + " of " + data.rows.length + " pair(s) shown" +
      (pairInput.value ? " (" + data.pairs[pairInput.value] + ")" : "");
  }
  [pairInput, cellInput].forEach(function (i) { i.addEventListener("change", draw); });
  sampleInput.addEventListener("input", draw);
  window.addEventListener("hashchange", fromAddress);
  fromAddress();
})();
