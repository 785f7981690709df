// bitgrid view: the HTML stepper (inlined into every page by bitgrid.view.page).
// It only shows what Python computed: the LUTs and their kinds and expressions, the cell
// contents, and the outputs of every cell after every subcycle of a run on the reference
// emulator (data in the JSON block #bitgrid-data, format bitgrid-view-v1). It emulates nothing.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("bitgrid-data").textContent);
  const W = data.width, H = data.height, SIDES = ["N", "E", "S", "W"];
  const STEP = [[0, -1], [1, 0], [0, 1], [-1, 0]];          // one step towards N, E, S, W
  const KIND = data.kind_codes, STYLE = data.style;

  function bytes(text) {
    const raw = atob(text), out = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out;
  }
  const lutBytes = bytes(data.luts), kinds = bytes(data.kinds), contents = bytes(data.contents);
  const values = data.frames ? bytes(data.values) : null;
  const edgeIn = data.frames ? bytes(data.edge_inputs) : null;
  const frames = data.frames ? data.frames : 1;
  const subcycles = frames - 1;

  function lut(x, y, d) { const i = ((y * W + x) * 4 + d) * 2; return lutBytes[i] | lutBytes[i + 1] << 8; }
  function kind(x, y, d) { return kinds[(y * W + x) * 4 + d]; }
  function bit(array, i) { return (array[i >> 3] >> (i & 7)) & 1; }
  // Output d of cell (x, y) after k subcycles (null without a run).
  function value(k, x, y, d) { return values ? bit(values, ((k * 4 + d) * H + y) * W + x) : null; }
  const laneCount = [W, H, W, H], laneBase = [0, W, W + H, 2 * W + H];
  // The edge input on lane `lane` of side d during subcycle t.
  function edgeInput(t, d, lane) {
    return edgeIn && t >= 0 && t < subcycles ? bit(edgeIn, t * 2 * (W + H) + laneBase[d] + lane) : null;
  }
  function expression(x, y, d) { return data.expressions[lut(x, y, d)]; }
  function kindName(code) { return data.kind_names[code]; }
  function isCopy(code) { return code >= KIND.COPY && code < KIND.LOGIC; }

  // ---- state ------------------------------------------------------------------------------
  let frame = 0, playing = false, timer = null, pinned = null, hover = null;
  const canvas = document.getElementById("grid"), ctx = canvas.getContext("2d");
  const view = { scale: 1, ox: 0, oy: 0, cw: 0, ch: 0 };
  const raster = document.createElement("canvas");
  raster.width = W; raster.height = H;
  let rasterFrame = -1;

  function colour(hex) { return [1, 3, 5].map(i => parseInt(hex.slice(i, i + 2), 16)); }
  const background = STYLE.background_keys.map(key => [0, 1].map(p => STYLE.background[key + "/" + p]));
  const backgroundRGB = background.map(pair => pair.map(colour));
  const ONE_RGB = colour(STYLE.value[1]);

  // ---- geometry ---------------------------------------------------------------------------
  function resize() {
    const dpr = window.devicePixelRatio || 1, box = canvas.getBoundingClientRect();
    view.cw = box.width; view.ch = box.height;
    canvas.width = Math.max(1, Math.round(box.width * dpr));
    canvas.height = Math.max(1, Math.round(box.height * dpr));
    draw();
  }
  // Room for the lane numbers and port labels beside the grid (as drawEdges writes them at
  // its largest font), at least 60 pixels.
  function labelMargin() {
    ctx.font = "12px 'DejaVu Sans', sans-serif";
    const along = {};
    (data.ports || []).forEach(port => port.bits.forEach((b, i) => {
      const text = port.bits.length === 1 ? port.name : port.name + "[" + i + "]";
      along[b.side + b.lane] = (along[b.side + b.lane] || 0) + ctx.measureText(text).width + 6;
    }));
    const labels = Math.max(0, ...Object.values(along));
    return Math.max(60, 2 * 8 + 8 + ctx.measureText(String(Math.max(W, H))).width + 6 + labels + 4);
  }
  function fitScale() {
    const m = labelMargin();
    return Math.max(0.05, Math.min((view.cw - 2 * m) / W, (view.ch - 2 * m) / H));
  }
  function fit() {
    view.scale = fitScale();
    view.ox = (view.cw - W * view.scale) / 2; view.oy = (view.ch - H * view.scale) / 2;
    draw();
  }
  function zoomAt(factor, px, py) {
    const s = Math.min(200, Math.max(fitScale() / 4, view.scale * factor));
    const gx = (px - view.ox) / view.scale, gy = (py - view.oy) / view.scale;
    view.scale = s; view.ox = px - gx * s; view.oy = py - gy * s;
    draw();
  }
  function cellAt(px, py) {
    const x = Math.floor((px - view.ox) / view.scale), y = Math.floor((py - view.oy) / view.scale);
    return x >= 0 && y >= 0 && x < W && y < H ? [x, y] : null;
  }
  function sidePoint(x, y, d, inset) {
    return [x + 0.5 + STEP[d][0] * (0.5 - inset), y + 0.5 + STEP[d][1] * (0.5 - inset)];
  }

  // ---- drawing ----------------------------------------------------------------------------
  function signalColour(v) { return v === null ? STYLE.arrow : STYLE.value[v]; }

  function drawRaster() {
    if (rasterFrame !== frame) {
      const rctx = raster.getContext("2d"), image = rctx.createImageData(W, H);
      for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) {
        const c = backgroundRGB[contents[y * W + x]][(x + y) & 1];
        let ones = 0;
        if (values) for (let d = 0; d < 4; d++) ones += value(frame, x, y, d);
        const f = ones / 4, i = (y * W + x) * 4;
        for (let j = 0; j < 3; j++) image.data[i + j] = Math.round(c[j] * (1 - f) + ONE_RGB[j] * f);
        image.data[i + 3] = 255;
      }
      rctx.putImageData(image, 0, 0);
      rasterFrame = frame;
    }
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(raster, view.ox, view.oy, W * view.scale, H * view.scale);
  }

  function arrowPath(x, y, source, d) {
    // Straight through the centre; a turn cuts the corner between its sides (as the pictures).
    if (source === (d + 2) % 4) return [sidePoint(x, y, source, 0.04), [x + 0.5, y + 0.5], sidePoint(x, y, d, 0.08)];
    if (source !== d) {
      const c = STYLE.turn_cut, [sx, sy] = STEP[source], [ox, oy] = STEP[d];
      return [sidePoint(x, y, source, 0.04), [x + 0.5 + (sx + ox) * c, y + 0.5 + (sy + oy) * c], sidePoint(x, y, d, 0.08)];
    }
    const [dx, dy] = STEP[d], px = -dy * 0.14, py = dx * 0.14, [ex, ey] = sidePoint(x, y, d, 0.04);
    return [[ex - px, ey - py], [x + 0.5 - px + dx * 0.1, y + 0.5 - py + dy * 0.1],
            [x + 0.5 + px + dx * 0.1, y + 0.5 + py + dy * 0.1], [ex + px - dx * 0.04, ey + py - dy * 0.04]];
  }

  function drawCell(x, y, s) {
    const X = view.ox + x * s, Y = view.oy + y * s;
    ctx.fillStyle = background[contents[y * W + x]][(x + y) & 1];
    ctx.fillRect(X, Y, s + 0.5, s + 0.5);
    if (s >= 14) { ctx.strokeStyle = STYLE.grid_line; ctx.lineWidth = 0.5; ctx.strokeRect(X, Y, s, s); }
    if (s >= 14 && values && frame > 0 && ((x + y) & 1) === ((frame - 1) & 1)) {
      const m = Math.min(10, s * 0.12);                   // this cell updated in the last subcycle
      ctx.fillStyle = STYLE.updated;
      ctx.beginPath(); ctx.moveTo(X, Y); ctx.lineTo(X + m, Y); ctx.lineTo(X, Y + m); ctx.fill();
    }
    if (contents[y * W + x] === 0) return;
    const lines = [];
    for (let d = 0; d < 4; d++) {
      const code = kind(x, y, d);
      if (code === KIND.ZERO) continue;
      const v = value(frame, x, y, d), col = signalColour(v);
      if (isCopy(code) && s >= 10) {
        const source = (code - KIND.COPY) % 4, pts = arrowPath(x, y, source, d);
        ctx.strokeStyle = col; ctx.fillStyle = col; ctx.lineWidth = Math.max(1, s / 40);
        ctx.beginPath();
        pts.forEach(([px, py], i) => (i ? ctx.lineTo : ctx.moveTo).call(ctx, view.ox + px * s, view.oy + py * s));
        ctx.stroke();
        const [ex, ey] = pts[pts.length - 1], [dx, dy] = STEP[d], h = 0.1;
        const bx = ex - dx * h, by = ey - dy * h;
        ctx.beginPath();
        ctx.moveTo(view.ox + ex * s, view.oy + ey * s);
        ctx.lineTo(view.ox + (bx - dy * h * 0.6) * s, view.oy + (by + dx * h * 0.6) * s);
        ctx.lineTo(view.ox + (bx + dy * h * 0.6) * s, view.oy + (by - dx * h * 0.6) * s);
        ctx.fill();
        if (code >= KIND.NOT) {
          const [cx, cy] = sidePoint(x, y, d, 0.2);
          ctx.beginPath(); ctx.fillStyle = "#fff";
          ctx.arc(view.ox + cx * s, view.oy + cy * s, 0.05 * s, 0, 2 * Math.PI);
          ctx.fill(); ctx.stroke();
        }
      } else if (!isCopy(code)) {
        lines.push(SIDES[d] + "=" + (code === KIND.ONE ? "1" : expression(x, y, d).replace(/ /g, "")));
      }
      if (v !== null && s >= 10) {
        const [mx, my] = sidePoint(x, y, d, 0.045), m = Math.max(2, 0.08 * s);
        ctx.fillStyle = col;
        ctx.fillRect(view.ox + mx * s - m / 2, view.oy + my * s - m / 2, m, m);
      }
    }
    if (lines.length && s >= 44) {
      const size = Math.min(14, s * 0.12);
      ctx.font = size + "px 'DejaVu Sans Mono', monospace";
      ctx.fillStyle = STYLE.text; ctx.textAlign = "center"; ctx.textBaseline = "middle";
      lines.forEach((line, i) => {
        let text = line;
        if (ctx.measureText(text).width > s * 0.9) text = line.slice(0, 2) + "0x" + lut(x, y, SIDES.indexOf(line[0])).toString(16).padStart(4, "0");
        ctx.fillText(text, X + s / 2, Y + s / 2 + (i - (lines.length - 1) / 2) * size * 1.15);
      });
    } else if (lines.length && s >= 14) {
      ctx.fillStyle = STYLE.text; ctx.font = Math.round(s * 0.4) + "px serif";
      ctx.textAlign = "center"; ctx.textBaseline = "middle";
      ctx.fillText("\u0192", X + s / 2, Y + s / 2);
    }
  }

  function laneStep(s) { let step = 1; while (step * s < 14) step *= 2; return step; }

  let labelBoxes = [];                                   // what drawEdges wrote, for scripts
  function drawEdges(s) {
    labelBoxes = [];
    const step = laneStep(s), font = Math.max(9, Math.min(12, s * 0.3));
    ctx.font = font + "px 'DejaVu Sans', sans-serif"; ctx.textBaseline = "middle";
    const labels = {};
    (data.ports || []).forEach(port => port.bits.forEach((b, i) => {
      const key = b.side + b.lane, text = port.bits.length === 1 ? port.name : port.name + "[" + i + "]";
      const first = i === 0;
      labels[key] = labels[key] || [];
      labels[key].push({ text, direction: port.direction, first });
    }));
    for (let d = 0; d < 4; d++) {
      for (let lane = 0; lane < laneCount[d]; lane++) {
        const horiz = d === 0 || d === 2;              // N and S lanes run along x
        const cx = horiz ? view.ox + (lane + 0.5) * s : (d === 1 ? view.ox + W * s : view.ox);
        const cy = horiz ? (d === 0 ? view.oy : view.oy + H * s) : view.oy + (lane + 0.5) * s;
        const [dx, dy] = STEP[d];
        const v = edgeInput(frame - 1, d, lane);
        if (v !== null && s >= 4) {                       // the input on this lane, pointing in
          const t = Math.min(8, s * 0.3), px = cx + dx * (t + 2), py = cy + dy * (t + 2);
          ctx.fillStyle = STYLE.value[v];
          ctx.beginPath(); ctx.moveTo(px - dx * t, py - dy * t);
          ctx.lineTo(px - dy * t * 0.6, py + dx * t * 0.6); ctx.lineTo(px + dy * t * 0.6, py - dx * t * 0.6);
          ctx.fill();
        }
        const here = labels[SIDES[d] + lane] || [];
        const shown = here.filter(l => step === 1 || l.first);
        const off = 2 * Math.min(8, s * 0.3) + 8;
        const numbered = lane % step === 0;
        if (!numbered && !shown.length) continue;
        ctx.save();
        ctx.translate(cx + dx * off, cy + dy * off);
        if (horiz) ctx.rotate(-Math.PI / 2);
        // Text runs away from the grid: along +x (up once rotated) on N and E, -x on S and W.
        const outward = d === 0 || d === 1 ? 1 : -1;
        ctx.textAlign = outward < 0 ? "right" : "left";
        let at = 0;
        const place = (text, colour, kind) => {
          const w = ctx.measureText(text).width, x0 = outward < 0 ? -at - w : at;
          ctx.fillStyle = colour; ctx.fillText(text, outward * at, 0);
          // Its box on the canvas (CSS pixels): rotated, local (lx, ly) is (ly, -lx) on screen.
          const tx = cx + dx * off, ty = cy + dy * off, f = font / 2;
          labelBoxes.push(horiz ? { text, kind, side: SIDES[d], lane, left: tx - f, right: tx + f, top: ty - x0 - w, bottom: ty - x0 }
                                : { text, kind, side: SIDES[d], lane, left: tx + x0, right: tx + x0 + w, top: ty - f, bottom: ty + f });
          at += w + 6;
        };
        if (numbered) place(String(lane), STYLE.grid_line, "lane");
        shown.forEach(l => place(l.text, STYLE.port[l.direction], "port"));
        ctx.restore();
      }
    }
  }

  function draw() {
    const dpr = window.devicePixelRatio || 1;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, view.cw, view.ch);
    const s = view.scale;
    if (s < 8) drawRaster();
    else {
      const x0 = Math.max(0, Math.floor(-view.ox / s)), x1 = Math.min(W, Math.ceil((view.cw - view.ox) / s));
      const y0 = Math.max(0, Math.floor(-view.oy / s)), y1 = Math.min(H, Math.ceil((view.ch - view.oy) / s));
      for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) drawCell(x, y, s);
    }
    ctx.strokeStyle = STYLE.grid_line; ctx.lineWidth = 1;
    ctx.strokeRect(view.ox, view.oy, W * s, H * s);
    drawEdges(s);
    [[hover, "#ff9f1c"], [pinned, "#000"]].forEach(([c, col]) => {
      if (!c) return;
      ctx.strokeStyle = col; ctx.lineWidth = 2;
      ctx.strokeRect(view.ox + c[0] * s, view.oy + c[1] * s, s, s);
    });
  }

  // ---- the panel and the labels -------------------------------------------------------------
  const $ = id => document.getElementById(id);
  function hexWord(bits) {                               // lane 0 first -> "0x..."
    let word = 0n;
    for (let i = bits.length - 1; i >= 0; i--) word = (word << 1n) | BigInt(bits[i]);
    return "0x" + word.toString(16);
  }
  // The edge outputs after `frame` subcycles: N_out lane i is output N of cell (i, 0), and so on.
  function edgeOutputs(k) {
    if (!values) return null;
    const side = (d, cell) => hexWord(Array.from({ length: laneCount[d] }, (_, i) => value(k, ...cell(i), d)));
    return { N: side(0, i => [i, 0]), E: side(1, i => [W - 1, i]), S: side(2, i => [i, H - 1]),
             W: side(3, i => [0, i]) };
  }

  function cellInfo(x, y) {
    const parity = (x + y) & 1, rows = [];
    for (let d = 0; d < 4; d++) {
      const code = kind(x, y, d), v = value(frame, x, y, d);
      rows.push({ side: SIDES[d], lut: "0x" + lut(x, y, d).toString(16).padStart(4, "0"),
                  kind: kindName(code), expression: expression(x, y, d), value: v });
    }
    const inputs = [];
    for (let d = 0; d < 4; d++) {                       // input d: the facing output of the neighbour
      const nx = x + STEP[d][0], ny = y + STEP[d][1];
      let v;
      if (nx < 0 || ny < 0 || nx >= W || ny >= H) v = edgeInput(frame - 1, d, d % 2 ? y : x);
      else v = value(frame, nx, ny, (d + 2) % 4);
      inputs.push(v === null ? (values ? 0 : null) : v);
    }
    return { x, y, parity, phase: "AB"[parity], rows, inputs };
  }

  function showCell(c) {
    const box = $("cell");
    if (!c) { box.innerHTML = '<p class="hint">Point at a cell to see its LUTs; click to keep it.</p>'; return; }
    const info = cellInfo(c[0], c[1]);
    const updated = frame > 0 ? ((frame - 1) & 1) === info.parity : false;
    let html = `<h2 id="cell-title">cell (${info.x}, ${info.y}) · parity ${info.parity} · phase ${info.phase}</h2>`;
    html += `<p class="hint" id="cell-updated">${frame === 0 ? "reset state" : updated ?
      `updated in subcycle ${frame - 1}` : `held in subcycle ${frame - 1} (phase ${"AB"[(frame - 1) & 1]} ran)`}</p>`;
    const summary = data.summaries[[0, 1, 2, 3].map(d => kind(c[0], c[1], d)).join(",")];
    if (summary) html += `<p id="cell-summary">${escape(summary)}</p>`;
    else if (contents[c[1] * W + c[0]] === 0) html += '<p id="cell-summary">unconfigured</p>';
    html += '<table id="cell-outputs"><tr><th>out</th><th>LUT</th><th>function</th><th>value</th></tr>';
    info.rows.forEach(r => {
      const fn = r.kind === "logic" ? r.expression : `${r.expression} (${r.kind})`;
      html += `<tr data-side="${r.side}"><td>${r.side}</td><td class="mono">${r.lut}</td>` +
        `<td class="mono">${escape(fn)}</td><td class="value value-${r.value}">${r.value === null ? "–" : r.value}</td></tr>`;
    });
    html += "</table>";
    if (values) html += `<p id="cell-inputs" class="mono">inputs now: ${"nesw".split("").map((n, d) => n + "=" + info.inputs[d]).join(" ")}</p>`;
    box.innerHTML = html;
  }
  function escape(text) { return String(text).replace(/[&<>]/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c]); }

  function update() {
    $("frame-slider").value = frame;
    const label = $("frame-label"), phase = $("phase-label");
    if (!values) { label.textContent = "no run (give --vectors, --inputs, --csv or --steps)"; phase.textContent = ""; }
    else if (frame === 0) {
      label.textContent = `frame 0 of ${subcycles}: reset, every output 0`;
      phase.textContent = "next: A"; phase.className = "phase phase-none";
    } else {
      const t = frame - 1, p = "AB"[t & 1];
      label.textContent = `frame ${frame} of ${subcycles}: after subcycle ${t}`;
      phase.textContent = `phase ${p} ran (x + y ${p === "A" ? "even" : "odd"})`;
      phase.className = "phase phase-" + p;
    }
    label.dataset.frame = frame;
    const outs = edgeOutputs(frame), box = $("edge-outputs");
    box.innerHTML = outs ? SIDES.map(s => `<div data-side="${s}">${s}_out ${outs[s]}</div>`).join("") : "";
    ["first", "back"].forEach(id => $(id).disabled = frame === 0);
    ["forward", "last"].forEach(id => $(id).disabled = frame === subcycles);
    $("play").disabled = subcycles === 0;
    $("play").textContent = playing ? "\u2016 pause" : "\u25b6 play";
    showCell(pinned || hover);
    draw();
  }

  function setFrame(k) { frame = Math.max(0, Math.min(subcycles, k | 0)); update(); }
  function pause() { playing = false; if (timer) clearInterval(timer); timer = null; update(); }
  function play() {
    if (subcycles === 0) return;
    if (frame === subcycles) frame = 0;
    playing = true;
    if (timer) clearInterval(timer);
    timer = setInterval(() => { if (frame >= subcycles) pause(); else setFrame(frame + 1); },
                        1000 / Number($("speed").value));
    update();
  }

  // ---- events -----------------------------------------------------------------------------
  $("first").onclick = () => setFrame(0);
  $("back").onclick = () => setFrame(frame - 1);
  $("forward").onclick = () => setFrame(frame + 1);
  $("last").onclick = () => setFrame(subcycles);
  $("play").onclick = () => (playing ? pause() : play());
  $("speed").onchange = () => { if (playing) play(); };
  $("fit").onclick = fit;
  $("zoom-in").onclick = () => zoomAt(1.5, view.cw / 2, view.ch / 2);
  $("zoom-out").onclick = () => zoomAt(1 / 1.5, view.cw / 2, view.ch / 2);
  $("frame-slider").max = subcycles;
  $("frame-slider").oninput = e => setFrame(Number(e.target.value));
  document.addEventListener("keydown", e => {
    if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT") return;
    const keys = { " ": () => (playing ? pause() : play()), ArrowRight: () => setFrame(frame + 1),
                   ArrowLeft: () => setFrame(frame - 1), Home: () => setFrame(0),
                   End: () => setFrame(subcycles), f: fit, "+": () => zoomAt(1.5, view.cw / 2, view.ch / 2),
                   "-": () => zoomAt(1 / 1.5, view.cw / 2, view.ch / 2) };
    if (keys[e.key]) { keys[e.key](); e.preventDefault(); }
  });
  canvas.addEventListener("wheel", e => {
    e.preventDefault();
    const box = canvas.getBoundingClientRect();
    zoomAt(Math.exp(-e.deltaY * 0.0015), e.clientX - box.left, e.clientY - box.top);
  }, { passive: false });
  let drag = null;
  canvas.addEventListener("pointerdown", e => { drag = { x: e.clientX, y: e.clientY, ox: view.ox, oy: view.oy, moved: false }; canvas.setPointerCapture(e.pointerId); });
  canvas.addEventListener("pointermove", e => {
    const box = canvas.getBoundingClientRect();
    if (drag) {
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (drag.moved) { view.ox = drag.ox + dx; view.oy = drag.oy + dy; draw(); return; }
    }
    const c = cellAt(e.clientX - box.left, e.clientY - box.top);
    if (String(c) !== String(hover)) { hover = c; if (!pinned) showCell(hover); draw(); }
  });
  canvas.addEventListener("pointerup", e => {
    const box = canvas.getBoundingClientRect();
    if (drag && !drag.moved) {
      const c = cellAt(e.clientX - box.left, e.clientY - box.top);
      pinned = c && String(c) !== String(pinned) ? c : null;
      showCell(pinned || hover); draw();
    }
    drag = null;
  });
  canvas.addEventListener("pointerleave", () => { hover = null; if (!pinned) showCell(null); draw(); });
  window.addEventListener("resize", resize);

  // ---- the accessor (for scripts and tests) ----------------------------------------------------
  window.bitgrid = {
    width: W, height: H, frames, subcycles,
    get frame() { return frame; }, get playing() { return playing; }, get scale() { return view.scale; },
    setFrame, forward: () => setFrame(frame + 1), back: () => setFrame(frame - 1), play, pause, fit,
    zoomAt, value: (x, y, side) => value(frame, x, y, typeof side === "string" ? SIDES.indexOf(side) : side),
    edgeOutputs: () => edgeOutputs(frame), cellInfo: (x, y) => cellInfo(x, y),
    // The polyline of a copy from input side `source` to output `d` of cell (x, y), cell units.
    arrowPath: (x, y, source, d) => arrowPath(x, y, source, d),
    // The lane numbers and port labels around the grid as drawn: text, kind ("lane" or
    // "port"), side, lane and box (left, right, top, bottom in client pixels).
    edgeLabels: () => { const box = canvas.getBoundingClientRect();
      return labelBoxes.map(b => ({ ...b, left: b.left + box.left, right: b.right + box.left,
                                      top: b.top + box.top, bottom: b.bottom + box.top })); },
    // The grid's rectangle in client pixels.
    gridBox: () => { const box = canvas.getBoundingClientRect();
      return { left: box.left + view.ox, top: box.top + view.oy, right: box.left + view.ox + W * view.scale,
               bottom: box.top + view.oy + H * view.scale }; },
    select: (x, y) => { pinned = [x, y]; update(); },
    // The centre of cell (x, y) in client (CSS pixel) coordinates.
    cellToClient: (x, y) => { const box = canvas.getBoundingClientRect();
      return { x: box.left + view.ox + (x + 0.5) * view.scale, y: box.top + view.oy + (y + 0.5) * view.scale }; },
  };

  const box = canvas.getBoundingClientRect();
  view.cw = box.width; view.ch = box.height;
  resize(); fit(); update();
  document.body.dataset.ready = "1";
})();
