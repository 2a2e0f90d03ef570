"""The studio's look: a Gradio theme and a small stylesheet for the HTML fragments."""

from __future__ import annotations

import gradio as gr


def theme() -> gr.themes.Base:
    return gr.themes.Soft(
        primary_hue=gr.themes.colors.indigo,
        secondary_hue=gr.themes.colors.slate,
        neutral_hue=gr.themes.colors.slate,
        radius_size=gr.themes.sizes.radius_md,
        text_size=gr.themes.sizes.text_md,
        # local fonts only: the studio must render without network access
        font=["ui-sans-serif", "system-ui", "-apple-system", "Segoe UI", "Roboto", "sans-serif"],
        font_mono=["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"],
    ).set(
        block_title_text_weight="600",
        block_label_background_fill="transparent",
        block_label_background_fill_dark="transparent",
        block_label_text_color="*neutral_600",
        block_label_text_color_dark="*neutral_300",
        block_label_text_weight="600",
        block_label_border_width="0px",
        block_label_padding="0px 2px",
        button_primary_background_fill="*primary_600",
        button_primary_background_fill_hover="*primary_700",
    )


CSS = """
:root { --aw-ok:#16a34a; --aw-ok-bg:#dcfce7; --aw-warn:#b45309; --aw-warn-bg:#fef3c7; --aw-err:#dc2626;
        --aw-err-bg:#fee2e2; --aw-info:#4f46e5; --aw-info-bg:#e0e7ff; --aw-idle:#64748b; --aw-idle-bg:#f1f5f9; }
.gradio-container { max-width: 1680px !important; margin-left: auto !important; margin-right: auto !important; }
/* table headers wrap between words, never inside one (a Dataframe with wrap=True breaks anywhere) */
.aw-card table th, .aw-card table th * { word-break: normal !important; overflow-wrap: normal !important;
                                         hyphens: none; }
.aw-card table td, .aw-card table td * { word-break: normal !important; overflow-wrap: break-word !important; }
.aw-empty { padding: 18px 4px; color: var(--body-text-color-subdued); }
footer { opacity: .75; }   /* API and Settings (the language) */
.aw-title { display:flex; align-items:baseline; gap:14px; padding:4px 2px 0 2px; }
.aw-title h1 { font-size: 22px; margin:0; font-weight:700; letter-spacing:-0.01em; white-space: nowrap; }
.aw-title .aw-sub { color: var(--body-text-color-subdued); font-size: 14px; }
.aw-title .aw-runs { margin-left: auto; max-width: 40%; overflow: hidden; text-overflow: ellipsis; white-space: nowrap;
                     }
.aw-muted { color: var(--body-text-color-subdued); font-size: 0.92em; }
.aw-empty { color: var(--body-text-color-subdued); padding: 10px 2px; font-style: italic; }
.aw-badge { display:inline-flex; align-items:center; gap:6px; font-size:12px; font-weight:600; padding:2px 10px;
            border-radius:999px; line-height:20px; white-space:nowrap; }
.aw-badge::before { content:""; width:7px; height:7px; border-radius:50%; background: currentColor; }
.aw-ok, .aw-finished { color: var(--aw-ok); background: var(--aw-ok-bg); }
.aw-warning, .aw-stopping { color: var(--aw-warn); background: var(--aw-warn-bg); }
.aw-error, .aw-failed { color: var(--aw-err); background: var(--aw-err-bg); }
.aw-running, .aw-checking { color: var(--aw-info); background: var(--aw-info-bg); }
.aw-queued, .aw-stopped, .aw-idle, .aw-unknown { color: var(--aw-idle); background: var(--aw-idle-bg); }
/* no endless animation on a running run: a repaint loop would cost the training machine CPU */
.aw-checking::before { animation: aw-pulse 1.2s ease-in-out infinite; }
@keyframes aw-pulse { 0%,100% { opacity: 1 } 50% { opacity: .25 } }
.aw-strip { display:flex; flex-wrap:wrap; align-items:center; gap:8px; padding: 6px 2px; }
.aw-chip { display:inline-flex; align-items:center; gap:8px; padding:6px 12px; border-radius:8px; font-weight:600;
           font-size:13px; border:1px solid var(--border-color-primary); background: var(--block-background-fill); }
.aw-dot { width:9px; height:9px; border-radius:50%; background: currentColor; display:inline-block; }
.aw-dot.aw-ok { color: var(--aw-ok); } .aw-dot.aw-warning { color: #f59e0b; } .aw-dot.aw-error { color: var(--aw-err); }
.aw-dot.aw-checking { color: var(--aw-info); animation: aw-pulse 1.2s infinite; } .aw-dot.aw-idle { color: #cbd5e1; }
.aw-dot { background: currentColor !important; }
.aw-mod-head { display:flex; align-items:center; justify-content:space-between; gap:10px; }
.aw-mod-title { font-size: 16px; font-weight: 700; }
.aw-msg { margin-top: 6px; font-size: 13.5px; line-height: 1.45; word-break: break-word; }
.aw-msg-error { color: var(--aw-err); font-weight: 500; }
.aw-msg-warn { color: var(--aw-warn); font-weight: 500; }
.aw-run [hidden] { display: none !important; }
[data-offline] .aw-run .aw-badge, [data-offline] .aw-run .aw-stats, [data-offline] .aw-run .aw-progress { opacity: .45; }
.aw-warnings { margin: 6px 0 0 0; padding-left: 18px; color: var(--aw-warn); font-size: 13px; }
.aw-kv { width:100%; border-collapse: collapse; font-size: 13.5px; }
.aw-kv th { text-align:left; width: 120px; color: var(--body-text-color-subdued); font-weight: 500; padding: 5px 8px 5px 0;
            vertical-align: top; white-space: nowrap; }
.aw-kv td { padding: 5px 0; border-bottom: 1px solid var(--border-color-primary); }
.aw-kv tr:last-child td { border-bottom: none; }
.aw-prompt { white-space: pre-wrap; font-size: 13px; }
.aw-table { width:100%; border-collapse: collapse; font-size: 13px; border: none !important; }
.aw-table td, .aw-table th { padding: 6px 8px; border: none !important;
               border-bottom: 1px solid var(--border-color-primary) !important; vertical-align: top; text-align: left; }
.aw-kv, .aw-kv tbody, .aw-kv tr, .aw-kv th, .aw-kv td, .aw-table tbody, .aw-table tr { border: none !important; }
.aw-kv th, .aw-kv td { border-bottom: 1px solid var(--border-color-primary) !important; }
.aw-kv tr:last-child th, .aw-kv tr:last-child td { border-bottom: none !important; }
.aw-engines details summary { cursor: pointer; }
.aw-engines tr.aw-selected td { background: var(--color-accent-soft); }
.aw-rendered-head { font-weight: 600; font-size: 13px; margin: 8px 0 4px; }
.aw-rendered { background: var(--background-fill-secondary); border: 1px solid var(--border-color-primary);
               border-radius: 8px; padding: 10px 12px; font-size: 12.5px; white-space: pre-wrap; word-break: break-word;
               max-height: 220px; overflow: auto; margin: 0; }
.aw-card { border: 1px solid var(--border-color-primary) !important; border-radius: 12px !important;
           padding: 14px !important; background: var(--block-background-fill) !important; }
.aw-launchbar { align-items: center !important; }
.aw-runbar { align-items: flex-end !important; }
/* a pressed Stop / Kill, until the buttons' one writer answers (static/live_monitor.js) */
#stop-btn[data-aw-pending], #kill-btn[data-aw-pending], #resume-btn[data-aw-pending] { pointer-events: none; opacity: .6; cursor: progress; }
#stop-btn[data-aw-pending]:not([data-aw-pending=""]) { color: transparent !important; position: relative; }
#stop-btn[data-aw-pending]:not([data-aw-pending=""])::after {
  content: attr(data-aw-pending); color: var(--button-cancel-text-color); position: absolute; inset: 0;
  display: flex; align-items: center; justify-content: center; }
.aw-launch-msg { font-size: 13.5px; }
.aw-launch-msg .aw-msg-error { color: var(--aw-err); }
/* monitor: updated parts are their own paint/layout islands (keeps repaints small) */
#run-header, #charts, #custom-chart, #samples, #log-tail, #events { contain: content; }
.aw-charts { display: grid; grid-template-columns: 1fr 1fr; gap: 14px; }
@media (max-width: 900px) { .aw-charts { grid-template-columns: 1fr; } }
.aw-chart-box { border: 1px solid var(--border-color-primary); border-radius: 12px; padding: 10px 12px 4px;
                background: var(--block-background-fill); }
.aw-chart-title { font-weight: 700; font-size: 14px; }
.aw-legend { display: flex; flex-wrap: wrap; gap: 12px; font-size: 12.5px; color: var(--body-text-color-subdued);
             margin: 2px 0 2px; min-height: 18px; }
.aw-key i { display: inline-block; width: 14px; height: 3px; border-radius: 2px; vertical-align: middle; margin-right: 5px; }
.aw-key b { color: var(--body-text-color); font-variant-numeric: tabular-nums; }
.aw-svg { width: 100%; height: auto; display: block; }
.aw-svg .aw-grid { stroke: var(--border-color-primary); stroke-width: 1; }
.aw-svg .aw-frame { fill: none; stroke: var(--border-color-primary); }
.aw-svg .aw-tick { font-size: 12px; fill: var(--body-text-color-subdued); font-variant-numeric: tabular-nums; }
.aw-svg .aw-axis { font-size: 11px; fill: var(--body-text-color-subdued); }
.aw-chart-empty { height: 120px; display: flex; align-items: center; justify-content: center; }
#aw-chart-custom:empty { display: none; }
.aw-diagnoses { margin-top: 12px; } .aw-diag { border-left: 4px solid #f59e0b; padding: 8px 12px; margin: 8px 0;
          background: var(--background-fill-secondary); border-radius: 6px; }
.aw-diag-advice { margin: 4px 0; } .aw-diag-evidence { margin: 4px 0 4px 18px; font-size: 12.5px; }
.aw-diag-clone { margin-top: 4px; padding: 3px 10px; border: 1px solid var(--border-color-primary); border-radius: 6px;
                 background: var(--block-background-fill); cursor: pointer; }
.aw-logtail { max-height: 330px; min-height: 120px; overflow: auto; margin: 0; padding: 10px 12px; font-size: 12px;
              line-height: 1.45; background: var(--background-fill-secondary); border: 1px solid var(--border-color-primary);
              border-radius: 8px; white-space: pre-wrap; word-break: break-word; }
.aw-run { border: 1px solid var(--border-color-primary); border-radius: 12px; padding: 14px 16px;
          background: var(--block-background-fill); }
.aw-run-top { display:flex; justify-content: space-between; align-items: flex-start; gap: 12px; }
.aw-run-id { font-weight: 700; font-size: 17px; font-family: var(--font-mono); }
.aw-progress { height: 8px; background: var(--background-fill-secondary); border-radius: 999px; margin: 12px 0;
               overflow: hidden; }
.aw-bar { height: 100%; background: var(--aw-info); border-radius: 999px; }
.aw-bar-finished { background: var(--aw-ok); } .aw-bar-failed { background: var(--aw-err); }
.aw-bar-stopped, .aw-bar-queued { background: #94a3b8; } .aw-bar-stopping { background: #f59e0b; }
.aw-stats { display:grid; grid-template-columns: repeat(auto-fit, minmax(110px, 1fr)); gap: 10px; }
.aw-stat { background: var(--background-fill-secondary); border-radius: 8px; padding: 8px 10px; }
.aw-stat-k { font-size: 11.5px; text-transform: uppercase; letter-spacing: .04em; color: var(--body-text-color-subdued); }
.aw-stat-v { font-size: 17px; font-weight: 650; font-variant-numeric: tabular-nums; margin-top: 2px; }
.aw-failure { margin-top: 12px; border: 1px solid var(--aw-err); background: var(--aw-err-bg); color: #7f1d1d;
              border-radius: 8px; padding: 10px 12px; font-size: 13.5px; }
.aw-note { margin-top: 10px; font-size: 13px; color: var(--aw-idle); }
.aw-samples { display:flex; flex-direction: column; gap: 10px; max-height: 520px; overflow-y: auto; }
.aw-sample { border: 1px solid var(--border-color-primary); border-radius: 10px; padding: 8px 10px; }
.aw-sample-head { display:flex; flex-wrap: wrap; gap: 10px; align-items: center; font-size: 12.5px;
                  color: var(--body-text-color-subdued); margin-bottom: 6px; }
.aw-total b { color: var(--body-text-color); }
.aw-groups-stats { display:flex; flex-wrap: wrap; align-items: flex-end; gap: 6px 18px; margin-bottom: 8px; }
.aw-group-grid { display:grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr)); gap: 10px; }
.aw-group { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 8px; font-size: 13px; }
.aw-group-head { display:flex; gap: 10px; align-items: baseline; }
.aw-group-flat { color: #b45309; font-weight: 600; }
.aw-group-prompt { color: var(--body-text-color-subdued); margin: 2px 0 6px; }
.aw-group-table { width:100%; border-collapse: collapse; }
.aw-group-table th, .aw-group-table td { text-align:left; padding: 2px 6px; border-bottom: 1px solid var(--border-color-primary); }
.aw-group-text { max-width: 260px; overflow-wrap: anywhere; }
.aw-probe-grid { display:grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 10px 18px; margin-top: 8px; }
.aw-probe-part { font-size: 13px; } .aw-probe-chip { margin-top: 6px; font-size: 13px; }
/* the probe panel's progress, report and filter lines take no room while they say nothing */
#probe-progress:has(.prose:empty), #probe-report:has(.prose:empty), #probe-filtered:has(.prose:empty) { display: none; }
.aw-hist { margin: 4px 0; } .aw-hist-row { display:flex; align-items:center; gap: 8px; font-size: 12px; }
.aw-hist-k { width: 64px; text-align: right; font-variant-numeric: tabular-nums; color: var(--body-text-color-subdued); }
.aw-hist-bar { flex: 1; height: 10px; background: var(--background-fill-secondary); border-radius: 3px; }
.aw-hist-bar span { display:block; height: 100%; background: var(--aw-info); border-radius: 3px; }
.aw-hist-n { width: 28px; font-variant-numeric: tabular-nums; }
.aw-rchip { background: var(--background-fill-secondary); border-radius: 6px; padding: 1px 7px; }
.aw-turn { border-left: 3px solid #cbd5e1; padding: 3px 8px; margin: 4px 0; font-size: 13px; }
.aw-role { font-size: 11px; text-transform: uppercase; letter-spacing: .05em; color: var(--body-text-color-subdued); }
.aw-role-assistant { border-left-color: var(--aw-info); } .aw-role-tool { border-left-color: #f59e0b; }
.aw-role-system { border-left-color: #94a3b8; }
.aw-content { white-space: pre-wrap; word-break: break-word; }
.aw-toolcall { font-size: 12.5px; margin-top: 3px; }
.aw-tool { margin: 2px 0; } .aw-param { cursor: help; } .aw-mcp-server { margin: 2px 0; }
.aw-src { font-size: 11px; border-radius: 6px; padding: 0 6px; background: var(--background-fill-secondary);
          color: var(--body-text-color-subdued); white-space: nowrap; text-transform: none; letter-spacing: normal; }
.aw-src-mcp { background: #ede9fe; color: #5b21b6; }
.aw-section-title { font-weight: 700; font-size: 15px; margin: 4px 0 2px; }
.aw-events td { font-size: 12.5px; }
/* the time and the event's name on one line each, the details wrap beside them: a Chinese name breaks between any two
   characters, and the table gave its column no more than one or two of them ("最佳检查点" on three lines) */
.aw-events .aw-event-time, .aw-events .aw-event-name { white-space: nowrap; width: 1%; }
.aw-events .aw-event-detail { overflow-wrap: anywhere; }
.aw-stat-sub { font-size: 12px; font-weight: 500; margin-top: 1px; }
.aw-memory { margin: 8px 0 4px; font-size: 13.5px; line-height: 1.5; }
.aw-parts { display:flex; flex-wrap: wrap; gap: 6px; margin-top: 4px; }
.aw-part { background: var(--background-fill-secondary); border-radius: 6px; padding: 1px 7px; font-size: 12.5px; }
.aw-settings-scroll { max-height: 420px; overflow-y: auto; margin-top: 6px; }
.aw-settings { table-layout: fixed; }
.aw-settings td { word-break: break-word; overflow-wrap: anywhere; }
.aw-settings th { text-align: left; font-size: 12px; color: var(--body-text-color-subdued); padding: 4px 8px;
                  position: sticky; top: 0; background: var(--background-fill-primary); }
.aw-settings td.aw-help { font-size: 12.5px; line-height: 1.4; }
.aw-settings tr.aw-set td { background: var(--color-accent-soft); }
.aw-cfg-set [data-testid="block-info"]::after { content: " •"; color: var(--color-accent); font-weight: 700; }
/* a value the field cannot hold (a typo): its name and what is wrong (the info line) in red, and the box outlined */
.aw-cfg-problem [data-testid="block-info"], .aw-cfg-problem .info-text { color: var(--error-text-color, #b91c1c); }
.aw-cfg-problem input, .aw-cfg-problem .wrap { box-shadow: 0 0 0 1px var(--error-border-color, #ef4444) !important; }
/* a setting's name is one long word (max_completion_length): it breaks at the column's edge instead of being cut, and
   a table's header wraps instead of ending in "…" (the Runs table's "last reward", Chinese headers) */
[id^="cfg-"] [data-testid="block-info"] { overflow-wrap: anywhere; white-space: normal; overflow: visible; }
.gradio-dataframe th .header-content, .gradio-dataframe th .cell-wrap, .gradio-dataframe th span {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important; }
.aw-trackers { margin-top: 8px; font-size: 13px; word-break: break-all; }
"""
