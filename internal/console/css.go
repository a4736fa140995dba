package console

// baseCSS is the console's shared style: system fonts, light and dark by
// the system's preference, no external assets.
const baseCSS = `
:root { color-scheme: light dark; --ok:#1a7f37; --bad:#cf222e; --warn:#9a6700; --idle:#8c959f; --bg:#f6f8fa; --card:#fff; --ink:#1f2328; --mute:#59636e; --line:#d1d9e0; --accent:#0969da; --chip:#eef1f4; }
@media (prefers-color-scheme: dark) { :root { --ok:#3fb950; --bad:#f85149; --warn:#d29922; --idle:#6e7681; --bg:#0d1117; --card:#151b23; --ink:#e6edf3; --mute:#9198a1; --line:#30363d; --accent:#4493f8; --chip:#212830; } }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",sans-serif; color:var(--ink); background:var(--bg); }
a { color:var(--accent); text-decoration:none; } a:hover { text-decoration:underline; }
h1 { font-size:1.25rem; margin:0 0 .5rem; } h1 .chip, h1 .badge { margin-left:.35rem; vertical-align:.15em; }
.card, section { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:.75rem 1rem; min-width:0; }
input, select, button, textarea { font:inherit; color:inherit; background:var(--card); border:1px solid var(--line); border-radius:6px; padding:.3rem .5rem; }
button { cursor:pointer; background:var(--chip); }
button.primary { background:var(--accent); border-color:var(--accent); color:#fff; font-weight:600; }
button.danger { border-color:var(--bad); color:var(--bad); }
.flash { margin:1rem 1rem 0; padding:.5rem .75rem; background:color-mix(in srgb, var(--accent) 12%, var(--card)); border:1px solid var(--accent); border-radius:6px; }
.flash.bad { background:color-mix(in srgb, var(--bad) 12%, var(--card)); border-color:var(--bad); }
code, pre, .mono { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:.92em; }
`

// consoleCSS lays out the console's pages.
const consoleCSS = `
nav.top { display:flex; gap:1.1rem; align-items:center; padding:.6rem 1.25rem; background:var(--card); border-bottom:1px solid var(--line); position:sticky; top:0; z-index:2; }
nav.top .brand { font-weight:700; color:var(--ink); font-size:1.05rem; letter-spacing:.01em; }
nav.top a[aria-current] { color:var(--ink); font-weight:600; border-bottom:2px solid var(--accent); }
.grow { flex:1; }
form.inline { display:inline; margin:0; }
button.link { border:0; background:none; color:var(--accent); padding:0; }
.mute { color:var(--mute); } .small { font-size:.85em; }
.chip { display:inline-block; padding:.05rem .55rem; border-radius:1rem; background:var(--chip); font-size:.85em; font-weight:500; }
.chip.warn { background:color-mix(in srgb, var(--warn) 20%, var(--card)); color:var(--warn); font-weight:600; }
main.page { padding:1rem 1.25rem; display:grid; gap:1rem; max-width:1400px; }
h2 { font-size:1rem; margin:.1rem 0 .6rem; display:flex; justify-content:space-between; gap:1rem; }
h2 small { font-weight:400; color:var(--mute); }
table { width:100%; border-collapse:collapse; }
td, th { text-align:left; padding:.3rem .45rem; border-top:1px solid var(--line); vertical-align:top; overflow-wrap:anywhere; }
th { color:var(--mute); font-weight:500; border-top:0; font-size:.9em; }
td.num, th.num { text-align:right; white-space:nowrap; font-variant-numeric:tabular-nums; }
table.events { background:var(--card); border:1px solid var(--line); border-radius:8px; overflow:hidden; }
table.events tr:hover td { background:color-mix(in srgb, var(--accent) 6%, var(--card)); }
.badge { display:inline-block; padding:0 .5rem; border-radius:.35rem; font-size:.82em; font-weight:600; background:var(--chip); }
.badge.st-processed { color:var(--ok); background:color-mix(in srgb, var(--ok) 14%, var(--card)); }
.badge.st-dead { color:var(--bad); background:color-mix(in srgb, var(--bad) 14%, var(--card)); }
.badge.st-pending { color:var(--warn); background:color-mix(in srgb, var(--warn) 16%, var(--card)); }
.badge.st-processing { color:var(--accent); background:color-mix(in srgb, var(--accent) 14%, var(--card)); }
.err { color:var(--bad); }
.filters { display:flex; flex-wrap:wrap; gap:.5rem .9rem; align-items:end; }
.filters label { display:grid; gap:.15rem; font-size:.82em; color:var(--mute); }
.filters input, .filters select { font-size:1.05em; color:var(--ink); }
.counts { display:flex; flex-wrap:wrap; gap:.5rem; align-items:center; }
.count { padding:.2rem .7rem; border:1px solid var(--line); border-radius:1rem; background:var(--card); color:var(--ink); }
.count b { font-variant-numeric:tabular-nums; }
.count.on { border-color:var(--accent); box-shadow:0 0 0 1px var(--accent) inset; }
.count.st-dead b { color:var(--bad); } .count.st-processed b { color:var(--ok); } .count.st-pending b { color:var(--warn); }
.pager { margin:0; }
a.button { display:inline-block; padding:.3rem .8rem; border:1px solid var(--line); border-radius:6px; background:var(--card); }
.empty { color:var(--mute); font-style:italic; }
.grid2 { display:grid; gap:1rem; grid-template-columns:repeat(auto-fit, minmax(min(100%, 30rem), 1fr)); }
dl.kv { display:grid; grid-template-columns:max-content 1fr; gap:.3rem 1rem; margin:0 0 .8rem; }
dl.kv dt { color:var(--mute); } dl.kv dd { margin:0; overflow-wrap:anywhere; }
form.replay { display:flex; flex-wrap:wrap; gap:.5rem; align-items:end; }
form.replay label { display:grid; gap:.15rem; font-size:.82em; color:var(--mute); }
ol.timeline { list-style:none; margin:0; padding:0 0 0 1rem; border-left:2px solid var(--line); }
ol.timeline li { position:relative; padding:.15rem 0 .6rem .6rem; }
ol.timeline li::before { content:""; position:absolute; left:-1.45rem; top:.5rem; width:.7rem; height:.7rem; border-radius:50%; background:var(--idle); border:2px solid var(--card); }
ol.timeline li.tl-processed::before { background:var(--ok); } ol.timeline li.tl-failed::before { background:var(--bad); }
ol.timeline li.tl-replayed::before { background:var(--warn); } ol.timeline li.tl-claimed::before { background:var(--accent); }
ol.timeline time { color:var(--mute); font-variant-numeric:tabular-nums; font-size:.9em; }
ol.timeline .detail { color:var(--mute); white-space:pre-wrap; margin-top:.1rem; }
ol.timeline li.tl-failed .detail { color:var(--bad); }
pre.payload { margin:0; padding:.75rem; background:var(--bg); border:1px solid var(--line); border-radius:6px; overflow:auto; max-height:32rem; line-height:1.4; }
kbd { font:inherit; font-size:.8em; border:1px solid var(--line); border-bottom-width:2px; border-radius:4px; padding:0 .3rem; }
footer { color:var(--mute); padding:.5rem 1.25rem 1.5rem; font-size:.85em; }
.verdict { display:flex; align-items:center; gap:1rem; padding:1rem 1.25rem; border-radius:10px; color:#fff; }
.verdict.ok { background:var(--ok); } .verdict.bad { background:var(--bad); }
.verdict.warn { background:#9a6700; } .verdict.nodata { background:#59636e; }
@media (prefers-color-scheme: dark) { .verdict.ok { background:#196c2e; } .verdict.bad { background:#b62324; } .verdict.warn { background:#845306; } .verdict.nodata { background:#3d444d; } }
.verdict h1 { margin:0; font-size:1.5rem; color:#fff; }
.verdict p { margin:0; opacity:.92; }
.kpis { display:grid; grid-template-columns:repeat(auto-fit, minmax(9rem, 1fr)); gap:.75rem; }
.kpi { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:.55rem .8rem; color:var(--ink); }
.kpi b { display:block; font-size:1.45rem; font-variant-numeric:tabular-nums; line-height:1.2; }
.kpi span { color:var(--mute); font-size:.85em; }
.kpi.bad b { color:var(--bad); } .kpi.warn b { color:var(--warn); }
.cols { display:grid; gap:1rem; grid-template-columns:repeat(auto-fit, minmax(min(100%, 24rem), 1fr)); }
.breach { border-left:4px solid var(--bad); padding:.4rem .75rem; margin:.4rem 0; background:color-mix(in srgb, var(--bad) 6%, var(--card)); border-radius:0 6px 6px 0; }
.breach b { color:var(--bad); }
.breach .todo { margin:.2rem 0 0; color:var(--ink); }
details.family { border-top:1px solid var(--line); padding:.35rem 0; }
details.family summary { cursor:pointer; display:flex; justify-content:space-between; }
details.family summary .ok { color:var(--ok); }
svg { width:100%; height:auto; display:block; }
svg .rx { fill:var(--idle); } svg .ok { fill:var(--ok); } svg .axis { stroke:var(--line); } svg text { font-size:10px; fill:var(--mute); }
svg circle.dot99 { fill:var(--accent); } svg polyline { fill:none; stroke:var(--accent); stroke-width:2; } svg polyline.p50 { stroke:var(--ok); stroke-dasharray:4 3; }
.dot { display:inline-block; width:.6rem; height:.6rem; border-radius:50%; background:var(--idle); margin-right:.35rem; }
.dot.ok { background:var(--ok); } .dot.bad { background:var(--bad); }
`
