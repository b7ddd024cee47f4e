// The report's only script, inlined into index.html and allowed there by its SHA-256 in the
// Content-Security-Policy (nothing else may run). For each data table: click a header to sort by
// that column (numbers as numbers, again to reverse), type to filter rows, and "show all" for
// long tables. It loads nothing.
(function () {
  // A cell's number, or null when it is not one ("—", text).
  function key(text) {
    var s = text.replace(/[,%\s]/g, '').replace(/^[<>≤≥~]/, '');
    if (s === '' || s === '—') return null;
    var n = Number(s);
    return isNaN(n) ? null : n;
  }
  document.querySelectorAll('table.data').forEach(function (t) {
    var body = t.tBodies[0];
    if (!body) return;
    var rows = Array.prototype.slice.call(body.rows);
    var bar = document.createElement('div');
    bar.className = 'controls';
    var box = document.createElement('input');
    box.type = 'search';
    box.placeholder = 'filter rows';
    box.setAttribute('aria-label', 'filter rows');
    bar.appendChild(box);
    if (rows.length > 15) {
      t.classList.add('long');
      var b = document.createElement('button');
      b.type = 'button';
      b.textContent = 'show all ' + rows.length + ' rows';
      b.addEventListener('click', function () {
        t.classList.toggle('open');
        b.textContent = t.classList.contains('open') ? 'show fewer' : 'show all ' + rows.length + ' rows';
      });
      bar.appendChild(b);
    }
    t.parentNode.insertBefore(bar, t);
    box.addEventListener('input', function () {
      var q = box.value.toLowerCase();
      if (q) t.classList.add('open');
      rows.forEach(function (r) {
        r.style.display = !q || r.textContent.toLowerCase().indexOf(q) >= 0 ? '' : 'none';
      });
    });
    Array.prototype.forEach.call(t.tHead.rows[0].cells, function (th, i) {
      th.setAttribute('aria-sort', 'none');
      th.addEventListener('click', function () {
        var asc = th.getAttribute('aria-sort') !== 'ascending';
        Array.prototype.forEach.call(t.tHead.rows[0].cells, function (o) {
          o.setAttribute('aria-sort', 'none');
        });
        th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
        rows.sort(function (a, b) {
          var x = a.cells[i].textContent, y = b.cells[i].textContent;
          var p = key(x), q = key(y);
          var c = p !== null && q !== null ? p - q : x.localeCompare(y);
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();
