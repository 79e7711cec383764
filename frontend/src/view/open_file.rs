//! "Open a history or a MONITOR capture" (issue 40): a drop zone and a file
//! picker on the start page, and the verdict card above the timeline.
//!
//! The page never reads the file: it posts the `File` to the explore
//! worker, which reads it in chunks and checks or replays it with core
//! (`history::open`, the CLI's caps), and answers with the trace the
//! timeline draws and the card, worded in both languages by core. So the
//! checker stays out of the page's module, and a 100 MB file neither blocks
//! the page nor passes through it.

use std::rc::Rc;

use locklab_core::history::card::{CardFinding, FileVerdict};
use locklab_core::history::open::Opened;
use yew::prelude::*;

use crate::explore::worker::ExploreWorker;
use crate::explore::WorkerEvent;
use crate::i18n::Lang;

fn t(lang: Lang, en: &'static str, zh: &'static str) -> &'static str {
    match lang {
        Lang::En => en,
        Lang::Zh => zh,
    }
}

fn words(text: &locklab_core::lesson::Bilingual, lang: Lang) -> String {
    match lang {
        Lang::En => text.en.clone(),
        Lang::Zh => text.zh.clone(),
    }
}

/// Where the opening is.
#[derive(Clone, PartialEq)]
enum Status {
    Idle,
    Reading { bytes: f64, size: f64 },
    Error(String),
}

#[derive(Properties, PartialEq)]
pub struct OpenFileProps {
    pub lang: Lang,
    /// The file was checked: show it.
    pub onopened: Callback<Option<Rc<Opened>>>,
}

/// The first file of a drop or a picker.
fn first_file(files: Option<web_sys::FileList>) -> Option<web_sys::File> {
    files.and_then(|f| f.get(0))
}

#[function_component(OpenFile)]
// long: a Yew view: the worker, the drop and pick callbacks, then one html! tree
pub fn open_file(props: &OpenFileProps) -> Html {
    let lang = props.lang;
    let status = use_state(|| Status::Idle);
    let over = use_state(|| false);
    let worker = use_mut_ref(|| None::<ExploreWorker>);
    {
        let worker = worker.clone();
        use_effect_with((), move |_| move || drop(worker.borrow_mut().take()));
    }
    // Each file gets a fresh worker: a new file cancels the one before.
    let open = {
        let (status, worker, onopened) = (status.clone(), worker.clone(), props.onopened.clone());
        Callback::from(move |file: web_sys::File| {
            let on = {
                let (status, onopened) = (status.clone(), onopened.clone());
                Callback::from(move |e: WorkerEvent| match e {
                    WorkerEvent::Opening { bytes, size } => status.set(Status::Reading { bytes, size }),
                    WorkerEvent::Opened(o) => {
                        status.set(Status::Idle);
                        onopened.emit(Some(Rc::new(*o)));
                    }
                    WorkerEvent::OpenError(m) | WorkerEvent::Error(m) => status.set(Status::Error(m)),
                    _ => {}
                })
            };
            match ExploreWorker::for_opening(on) {
                Ok(w) => {
                    status.set(Status::Reading {
                        bytes: 0.0,
                        size: file.size(),
                    });
                    w.open(&file);
                    *worker.borrow_mut() = Some(w);
                }
                Err(m) => status.set(Status::Error(m)),
            }
        })
    };
    let onchange = {
        let open = open.clone();
        Callback::from(move |e: Event| {
            let input: web_sys::HtmlInputElement = e.target_unchecked_into();
            if let Some(f) = first_file(input.files()) {
                open.emit(f);
            }
            // The same file picked again is a change again.
            input.set_value("");
        })
    };
    let ondragover = {
        let over = over.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            over.set(true);
        })
    };
    let ondragleave = {
        let over = over.clone();
        Callback::from(move |_: DragEvent| over.set(false))
    };
    let ondrop = {
        let over = over.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            over.set(false);
            if let Some(f) = first_file(e.data_transfer().and_then(|d| d.files())) {
                open.emit(f);
            }
        })
    };
    let shown = match &*status {
        Status::Idle => Html::default(),
        Status::Reading { bytes, size } => {
            let pct = if *size > 0.0 { bytes * 100.0 / size } else { 0.0 };
            html! {
                <p class="open-file-note" data-testid="open-file-reading" aria-live="polite">
                    { format!("{} {pct:.0}%", t(lang, "Reading and checking in the worker…", "正在 worker 中读取并检查…")) }
                </p>
            }
        }
        Status::Error(m) => html! {
            <p class="error" role="alert" data-testid="open-file-error">
                { format!("{} {m}", t(lang, "This file cannot be opened:", "无法打开此文件：")) }
            </p>
        },
    };
    html! {
        <div class={ classes!("open-file", over.then_some("over")) } data-testid="open-file"
            {ondragover} {ondragleave} {ondrop}>
            <h2>{ t(lang, "Open a history or a MONITOR capture", "打开历史记录或 MONITOR 抓取") }</h2>
            <p class="open-file-note">
                { t(lang, "Drop a file here, or pick one: a history (JSON lines, as locklab check reads) or what redis-cli MONITOR printed. It is checked in the browser and drawn on the timeline.",
                    "把文件拖到这里，或选择一个：历史记录（JSON 行，locklab check 读取的格式）或 redis-cli MONITOR 的输出。文件在浏览器中检查，并画在时间线上。") }
            </p>
            <input type="file" data-testid="open-file-input" aria-label={ t(lang, "history or capture file", "历史或抓取文件") } {onchange} />
            { shown }
        </div>
    }
}

#[derive(Properties, PartialEq)]
pub struct CardProps {
    pub lang: Lang,
    pub card: FileVerdict,
    pub onclose: Callback<()>,
}

/// The verdict card: the headline, what was checked, each finding with its
/// witness, and what was skipped.
#[function_component(VerdictCard)]
pub fn verdict_card(props: &CardProps) -> Html {
    let (lang, c) = (props.lang, &props.card);
    // The first finding open, the rest one line each: the card stays short
    // enough to leave the timeline in view.
    let found = c.found.iter().enumerate().map(|(i, f)| finding(f, i == 0, lang));
    let onclose = props.onclose.reform(|_: MouseEvent| ());
    html! {
        <section class={ classes!("verdict-card", if c.clean { "clean" } else { "broken" }) } data-testid="verdict-card"
            data-kind={ c.kind.clone() } data-clean={ c.clean.to_string() } data-found={ c.found.len().to_string() }>
            <div class="verdict-head">
                <h2 data-testid="verdict-headline">{ words(&c.headline, lang) }</h2>
                <button class="quiet" data-testid="verdict-close" onclick={ onclose }>{ t(lang, "Close the file", "关闭文件") }</button>
            </div>
            <ul class="verdict-checked">{ for c.checked.iter().map(|l| html! { <li>{ words(l, lang) }</li> }) }</ul>
            { for found }
            if c.more > 0 {
                <p class="open-file-note">{ more_findings(c.more, lang) }</p>
            }
            { for c.notes.iter().map(|n| html! { <p class="open-file-note" data-testid="verdict-note">{ words(n, lang) }</p> }) }
        </section>
    }
}

/// A finding's sentence in the page's language (core's English when it
/// has no Chinese).
fn detail(f: &CardFinding, lang: Lang) -> String {
    match lang {
        Lang::Zh if !f.detail_zh.is_empty() => f.detail_zh.clone(),
        _ => f.detail.clone(),
    }
}

fn more_findings(n: usize, lang: Lang) -> String {
    match (lang, n) {
        (Lang::Zh, n) => format!("另有 {n} 处发现画在时间线上"),
        (_, 1) => "1 more finding is drawn on the timeline".to_owned(),
        (_, n) => format!("{n} more findings are drawn on the timeline"),
    }
}

fn finding(f: &CardFinding, open: bool, lang: Lang) -> Html {
    let span = format!("{}–{} ms", f.from_ms, f.to_ms);
    html! {
        <details class="verdict-finding" data-testid="verdict-finding" data-name={ f.name.clone() } open={ open }>
            <summary>
                <strong>{ words(&f.title, lang) }</strong>
                { format!(" ({}) · {span} · {}", f.name, f.clients.join(", ")) }
            </summary>
            <p class="verdict-detail" data-testid="verdict-detail">{ detail(f, lang) }</p>
            <p class="open-file-note">{ t(lang, "Minimal witness:", "最小见证：") }</p>
            <pre class="verdict-witness" data-testid="verdict-witness">{ f.witness.join("\n") }</pre>
        </details>
    }
}
