//! The browser app, end to end, in headless Chromium.
//!
//! `dist/` (built by `cargo xtask dist`; `./scripts/test` builds it first)
//! is served by the backend's own `web::app` and real-Redis API on a free
//! loopback port (managed redis-servers for the real driver), a
//! `chromedriver` is started on another, and the test drives Chromium
//! through WebDriver: the page renders, lines typed into the console come
//! back exactly as redis-cli prints them, the clock expires a lock, the
//! language switches, and a URL with query parameters reproduces the view
//! after a reload; in a lesson, off-script lines survive a step back, interview
//! mode keeps a score across a reload, the timeline pans, and 中文 mode words
//! the world steps in Chinese. Screenshots land in `tests/out/`.
//!
//! Nothing sleeps for a fixed time: every wait polls for a condition with a
//! deadline, so the test is as fast as the machine and fails with a message
//! saying what never happened.

use std::future::Future;
use std::time::{Duration, Instant};

use fantoccini::actions::{InputSource, KeyAction, KeyActions, MouseActions, PointerAction, MOUSE_BUTTON_LEFT};
use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use locklab_tests::browser::{self as harness, attr, browser, js, require_dist, screenshot, text, viewport, Backend};
use serde_json::{json, Value};

/// How many times the page fetched the engine module (the simulator).
const ENGINE_FETCHES: &str =
    "return performance.getEntriesByType('resource').filter(e => /\\/engine(_bg\\.wasm|\\.js)$/.test(e.name)).length";

/// Generous: the first page load also starts Chromium on a busy machine.
const WAIT: Duration = Duration::from_secs(30);

/// How long a real lesson's managed topology may take to start.
const TOPOLOGY_WAIT: Duration = Duration::from_secs(120);

/// [`harness::eventually`] with this suite's deadline.
async fn eventually<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    harness::eventually(WAIT, what, probe).await
}

/// Lesson 07's replies, step by step: the article's safe release of 6.2,
/// then the bare DEL its title promises, which takes B's lock.
const LESSON_07_REPLIES: [&str; 7] = [
    "OK",
    "(integer) 1",
    "OK",
    "(integer) 0",
    "\"token-B-222\"",
    "(integer) 1",
    "(nil)",
];

/// How many steps lesson 07 has, from its file.
fn lesson_07_steps() -> usize {
    lesson_steps("07")
}

/// How many steps lesson `id` has.
fn lesson_steps(id: &str) -> usize {
    locklab_core::lesson::builtin()
        .unwrap()
        .into_iter()
        .find(|l| l.id == id)
        .unwrap()
        .steps
        .len()
}

/// Step lesson `id` forward to its end, one step at a time, each answered
/// before the next (a real run's step is busy until its reply is back).
async fn step_to_end(c: &Client, id: &str, steps: usize) {
    for n in 1..=steps {
        click(c, "[data-testid=step-forward]").await;
        let label = step_label(n, steps);
        eventually(&format!("step {n} of lesson {id}"), || async {
            (text(c, "[data-testid=step-name]").await? == label && count(c, "[data-testid=step-busy]").await == 0)
                .then_some(())
        })
        .await;
    }
}

/// Wait until the first element matching `css` has `attr` = `want`.
async fn attr_becomes(c: &Client, what: &str, css: &str, attr: &str, want: &str) {
    eventually(what, || async {
        let got = c.find(Locator::Css(css)).await.ok()?.attr(attr).await.ok()??;
        (got == want).then_some(())
    })
    .await;
}

/// Wait for the lesson's outcome to show as met.
async fn outcome_ok(c: &Client) {
    attr_becomes(c, "the outcome", "[data-testid=outcome]", "data-ok", "true").await;
}

/// What the step counter shows after `n` of `steps` steps.
fn step_label(n: usize, steps: usize) -> String {
    if n == steps {
        "end".to_owned()
    } else {
        n.to_string()
    }
}

async fn count(c: &Client, css: &str) -> usize {
    c.find_all(Locator::Css(css)).await.map_or(0, |v| v.len())
}

/// Type `line` into the console and return the reply it printed.
async fn run(c: &Client, line: &str) -> String {
    let before = count(c, "[data-testid=console-reply]").await;
    let input = c.find(Locator::Css("[data-testid=console-input]")).await.unwrap();
    input
        .send_keys(&format!("{line}{}", char::from(Key::Enter)))
        .await
        .unwrap();
    eventually(&format!("a reply to `{line}`"), || async {
        let replies = c.find_all(Locator::Css("[data-testid=console-reply]")).await.ok()?;
        if replies.len() > before {
            replies.last()?.text().await.ok()
        } else {
            None
        }
    })
    .await
}

async fn tab(c: &Client, client: &str) {
    let css = format!("[data-testid=console-tab][data-client={client}]");
    c.find(Locator::Css(&css)).await.unwrap().click().await.unwrap();
    let what = format!("client {client}'s console");
    attr_becomes(c, &what, "[data-testid=console]", "data-client", client).await;
}

async fn press(c: &Client, key: char) {
    let keys = KeyActions::new("keyboard".to_owned())
        .then(KeyAction::Down { value: key })
        .then(KeyAction::Up { value: key });
    c.perform_actions(keys).await.unwrap();
}

/// Load `url` and wait until the app has rendered and reported ready and,
/// on the simulator, until the engine module has loaded and the page shows
/// what it played; returns the ready time in ms since navigation start.
async fn open(c: &Client, url: &str) -> f64 {
    c.goto(url).await.unwrap();
    eventually("the app to render its console", || async {
        c.find(Locator::Css("[data-testid=console-input]")).await.ok()
    })
    .await;
    let ready = eventually("the app's ready mark", || async {
        js(c, "return document.documentElement.dataset.readyMs || null")
            .await
            .as_str()?
            .parse()
            .ok()
    })
    .await;
    if !url.contains("driver=real") {
        eventually("the simulator's module", || async {
            let engine = js(c, "return document.documentElement.dataset.engine || null").await;
            (engine.as_str()? == "ready").then_some(())
        })
        .await;
    }
    ready
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_in_headless_chromium() {
    let started = Instant::now();
    let dist = require_dist();
    let backend = Backend::start(&dist, 0);
    let base = format!("http://127.0.0.1:{}", backend.port);
    let (driver, c) = browser().await;

    // The server: health, and the wasm with the type browsers insist on.
    c.goto(&format!("{base}/api/health")).await.unwrap();
    let health: Value = serde_json::from_str(&text(&c, "body").await.unwrap()).unwrap();
    assert_eq!(health["topology"], json!("managed"), "{health}");
    assert!(health["lessons"].as_array().is_some_and(|l| l.len() > 20), "{health}");
    c.goto(&format!("{base}/")).await.unwrap();
    let wasm_type = js(
        &c,
        "const l = document.querySelector('link[rel=preload][href$=\".wasm\"]');\
         return l ? fetch(l.href).then(r => r.headers.get('content-type')) : null",
    )
    .await;
    assert_eq!(wasm_type, json!("application/wasm"));

    // Renders: layout, lessons, timeline, console, badge.
    let ready_ms = open(&c, &format!("{base}/?lang=en")).await;
    // On the simulator the page has fetched the engine module (its .js and
    // .wasm, once each).
    assert_eq!(
        js(&c, ENGINE_FETCHES).await,
        json!(2),
        "the engine module is fetched once"
    );
    let lessons = locklab_core::lesson::builtin().unwrap().len();
    assert!(lessons >= 42, "{lessons}");
    assert_eq!(count(&c, "[data-testid=lesson-item]").await, lessons);
    assert_eq!(count(&c, "[data-testid=timeline]").await, 1);
    assert_eq!(count(&c, "[data-testid=console]").await, 1);
    assert_eq!(
        text(&c, "[data-testid=driver][aria-pressed=true]").await.as_deref(),
        Some("simulator")
    );
    assert_eq!(js(&c, "return document.documentElement.lang").await, json!("en"));

    // The console speaks redis-cli.
    assert_eq!(run(&c, "SET lock:order:1 token-A-111 NX PX 30000").await, "OK");
    tab(&c, "B").await;
    assert_eq!(run(&c, "SET lock:order:1 token-B-222 NX PX 30000").await, "(nil)");
    assert_eq!(run(&c, "GET lock:order:1").await, "\"token-A-111\"");
    assert_eq!(run(&c, "EXISTS lock:order:1").await, "(integer) 1");
    assert_eq!(run(&c, "SET k \"open").await, "Invalid argument(s)");
    assert_eq!(run(&c, "PTTL nosuchkey").await, "(integer) -2");
    assert_eq!(
        count(&c, "[data-testid=lock-bar][data-owner=A][data-open=true]").await,
        1
    );

    // ↑ brings the last line back, ↓ the empty draft.
    let input = c.find(Locator::Css("[data-testid=console-input]")).await.unwrap();
    input.send_keys(&char::from(Key::Up).to_string()).await.unwrap();
    eventually("↑ to recall the last line", || async {
        (input.prop("value").await.ok()?? == "PTTL nosuchkey").then_some(())
    })
    .await;
    input.send_keys(&char::from(Key::Down).to_string()).await.unwrap();
    eventually("↓ to restore the draft", || async {
        input.prop("value").await.ok()??.is_empty().then_some(())
    })
    .await;

    // 31 s later the lock has expired (at 30 s it is still there, as in
    // Redis: PTTL 0), and B gets it.
    c.find(Locator::Css("[data-testid=advance-30000]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    attr_becomes(&c, "the clock at 30 s", "[data-testid=clock-now]", "data-ms", "30000").await;
    assert_eq!(count(&c, "[data-testid=lock-bar][data-open=true]").await, 1);
    c.find(Locator::Css("[data-testid=advance-1000]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    eventually("the lock bar to close at expiry", || async {
        (count(&c, "[data-testid=lock-bar][data-open=false]").await == 1).then_some(())
    })
    .await;
    assert_eq!(count(&c, "[data-testid=expiry][data-key='lock:order:1']").await, 1);
    assert_eq!(run(&c, "GET lock:order:1").await, "(nil)");
    assert_eq!(run(&c, "SET lock:order:1 token-B-222 NX PX 30000").await, "OK");
    tab(&c, "A").await;
    assert_eq!(run(&c, "GET lock:order:1").await, "\"token-B-222\"");
    screenshot(&c, "browser-console-en.png").await;

    // Shortcuts: `?` opens the help (outside the console), Escape closes it.
    js(&c, "document.activeElement.blur(); return null").await;
    press(&c, '?').await;
    eventually("the shortcuts overlay", || async {
        c.find(Locator::Css("[data-testid=help]")).await.ok()
    })
    .await;
    press(&c, char::from(Key::Escape)).await;
    eventually("the overlay to close", || async {
        (count(&c, "[data-testid=help]").await == 0).then_some(())
    })
    .await;

    // Language: the switch changes the page and the URL.
    c.find(Locator::Css("[data-testid=lang-switch] [data-lang=zh]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    eventually("the page in Chinese", || async {
        (text(&c, "[data-testid=driver][aria-pressed=true]").await? == "模拟器").then_some(())
    })
    .await;
    assert_eq!(js(&c, "return document.documentElement.lang").await, json!("zh-CN"));
    assert_eq!(
        c.current_url().await.unwrap().query(),
        Some("lang=zh&seed=1&driver=sim")
    );

    // A link reproduces the view.
    let query = "lang=zh&lesson=05&step=end&seed=7&driver=sim";
    open(&c, &format!("{base}/?{query}")).await;
    let selected = c
        .find(Locator::Css("[data-testid=lesson-item][aria-current=true]"))
        .await
        .unwrap();
    assert_eq!(selected.attr("data-lesson").await.unwrap().as_deref(), Some("05"));
    assert_eq!(
        c.find(Locator::Css("[data-testid=lesson-title]"))
            .await
            .unwrap()
            .attr("data-lesson")
            .await
            .unwrap()
            .as_deref(),
        Some("05")
    );
    assert_eq!(
        attr(&c, "[data-testid=step-name]", "data-step").await.as_deref(),
        Some("end")
    );
    assert_eq!(text(&c, "[data-testid=step-name]").await.as_deref(), Some("结束"));
    assert_eq!(
        text(&c, "[data-testid=driver][aria-pressed=true]").await.as_deref(),
        Some("模拟器")
    );
    assert_eq!(c.current_url().await.unwrap().query(), Some(query));
    // Choosing another lesson rewrites the URL; a reload restores it.
    c.find(Locator::Css("[data-testid=lesson-item][data-lesson='07']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    eventually("the URL to follow the lesson", || async {
        (c.current_url().await.ok()?.query()? == "lang=zh&lesson=07&seed=7&driver=sim").then_some(())
    })
    .await;
    c.refresh().await.unwrap();
    eventually("lesson 07 restored after a reload", || async {
        let item = c
            .find(Locator::Css("[data-testid=lesson-item][aria-current=true]"))
            .await
            .ok()?;
        (item.attr("data-lesson").await.ok()??.as_str() == "07").then_some(())
    })
    .await;
    assert_eq!(
        text(&c, "[data-testid=driver][aria-pressed=true]").await.as_deref(),
        Some("模拟器")
    );
    assert_eq!(run(&c, "SET lock:order:1 token-A-111 NX PX 30000").await, "OK");
    screenshot(&c, "browser-lesson-zh.png").await;

    // Lesson 07, step by step: the step list and the console show the
    // article's replies (1, OK, 0, "token-B-222").
    let lesson_ms = open(&c, &format!("{base}/?lang=en&lesson=07")).await;
    let steps = lesson_07_steps();
    assert_eq!(count(&c, "[data-testid=step]").await, steps);
    assert_eq!(text(&c, "[data-testid=step-name]").await.as_deref(), Some("0"));
    assert!(text(&c, "[data-testid=narration]")
        .await
        .unwrap()
        .contains("compare-and-delete"));
    step_to_end(&c, "07", steps).await;
    let mut replies = Vec::new();
    for r in c.find_all(Locator::Css("[data-testid=step-reply]")).await.unwrap() {
        replies.push(r.text().await.unwrap().trim_start_matches("actual").trim().to_owned());
    }
    assert_eq!(replies, LESSON_07_REPLIES);
    assert_eq!(count(&c, "[data-testid=step-mismatch]").await, 0);
    assert_eq!(text(&c, "[data-testid=step-name]").await.as_deref(), Some("end"));
    assert_eq!(
        c.current_url().await.unwrap().query(),
        Some("lang=en&lesson=07&step=end&seed=1&driver=sim")
    );
    let mut console = Vec::new();
    for r in c.find_all(Locator::Css("[data-testid=console-reply]")).await.unwrap() {
        console.push(r.text().await.unwrap());
    }
    assert_eq!(
        console,
        ["OK", "(integer) 1", "(integer) 0", "\"token-B-222\"", "(integer) 1"],
        "client A's console"
    );
    // Off script, on the same world: A's bare DEL took B's lock.
    tab(&c, "B").await;
    assert_eq!(run(&c, "GET lock:order:1001").await, "(nil)");
    // Keys: ← steps back (a replay), Home restarts, → steps on.
    js(&c, "document.activeElement.blur(); return null").await;
    press(&c, char::from(Key::Left)).await;
    let back = (steps - 1).to_string();
    eventually("← to step back", || async {
        (text(&c, "[data-testid=step-name]").await? == back).then_some(())
    })
    .await;
    press(&c, char::from(Key::Home)).await;
    eventually("Home to restart", || async {
        (text(&c, "[data-testid=step-name]").await? == "0").then_some(())
    })
    .await;
    press(&c, char::from(Key::Right)).await;
    eventually("→ to step on", || async {
        (text(&c, "[data-testid=step-name]").await? == "1").then_some(())
    })
    .await;
    // Play runs to the end by itself (at 8×).
    c.find_all(Locator::Css("[data-testid=speed]"))
        .await
        .unwrap()
        .last()
        .unwrap()
        .click()
        .await
        .unwrap();
    press(&c, ' ').await;
    eventually("play to reach the end", || async {
        (text(&c, "[data-testid=step-name]").await? == "end").then_some(())
    })
    .await;
    screenshot(&c, "browser-lesson-07-en.png").await;

    // Lesson 05 at its end: two holders on the node, and the violation band.
    let t05 = Instant::now();
    open(&c, &format!("{base}/?lang=en&lesson=05&step=end&seed=7&driver=sim")).await;
    let interactive_05 = t05.elapsed();
    assert!(count(&c, "[data-testid=lock-bar]").await >= 2, "lock bars for A and B");
    assert!(count(&c, "[data-testid=lock-bar][data-owner=B]").await >= 1);
    assert!(count(&c, "[data-testid=lock-bar][data-owner=C]").await >= 1);
    assert!(count(&c, "[data-testid=violation]").await >= 1, "the violation band");
    assert!(
        count(&c, "[data-testid=timeline-span][data-kind=paused]").await >= 1,
        "A's pause is shaded"
    );
    assert_eq!(
        c.current_url().await.unwrap().query(),
        Some("lang=en&lesson=05&step=end&seed=7&driver=sim")
    );
    screenshot(&c, "browser-lesson-05-en.png").await;
    // The fault toolbox acts on the same world; export offers the SVG.
    let before = js(
        &c,
        "return document.querySelector('[data-testid=timeline]').dataset.events",
    )
    .await;
    c.find(Locator::Css("[data-testid=fault-crash]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    eventually("the crash in the trace", || async {
        let now = js(
            &c,
            "return document.querySelector('[data-testid=timeline]').dataset.events",
        )
        .await;
        (now != before).then_some(())
    })
    .await;
    c.find(Locator::Css("[data-testid=export-svg]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let href = js(
        &c,
        "return document.querySelector('[data-testid=export-svg]').getAttribute('href')",
    )
    .await;
    assert!(
        href.as_str().unwrap_or_default().starts_with("data:image/svg+xml"),
        "{href}"
    );
    // Language switch on a lesson, then a reload from the URL.
    c.find(Locator::Css("[data-testid=lang-switch] [data-lang=zh]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    eventually("the lesson in Chinese", || async {
        (text(&c, "[data-testid=narration]").await?.contains("临界区")).then_some(())
    })
    .await;
    c.refresh().await.unwrap();
    eventually("lesson 05 at its end after a reload, in Chinese", || async {
        let t = text(&c, "[data-testid=step-name]").await?;
        let raw = attr(&c, "[data-testid=step-name]", "data-step").await?;
        let n = text(&c, "[data-testid=narration]").await?;
        (raw == "end" && t == "结束" && n.contains("临界区") && count(&c, "[data-testid=violation]").await >= 1)
            .then_some(())
    })
    .await;
    screenshot(&c, "browser-lesson-05-zh.png").await;

    off_script_survives_a_step_back(&c, &base).await;
    interview_mode_keeps_score(&c, &base).await;
    timeline_pans(&c, &base).await;
    world_steps_read_in_chinese(&c, &base).await;
    // The lessons are a file of their own: without it (and its precompressed
    // .gz and .br, which would be served in its place) the page says what
    // failed instead of showing an empty lab.
    let broken = std::env::temp_dir().join(format!("locklab-dist-without-lessons-{}", std::process::id()));
    std::fs::create_dir_all(&broken).unwrap();
    for entry in std::fs::read_dir(&dist).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("lessons-") && [".json", ".json.gz", ".json.br"].iter().any(|e| name.ends_with(e))) {
            std::fs::copy(entry.path(), broken.join(&name)).unwrap();
        }
    }
    let broken_backend = Backend::start(&broken, 0);
    let broken_base = format!("http://127.0.0.1:{}", broken_backend.port);
    c.goto(&format!("{broken_base}/?lang=en")).await.unwrap();
    let error = eventually("the page to say the lessons could not be loaded", || async {
        text(&c, "[data-testid=load-error]").await
    })
    .await;
    assert!(
        error.contains("The lessons could not be loaded") && error.contains("/lessons-"),
        "{error}"
    );
    assert_eq!(count(&c, "[data-testid=console-input]").await, 0);
    std::fs::remove_dir_all(&broken).unwrap();

    c.close().await.unwrap();
    drop(driver);
    eprintln!(
        "browser test: first interactive render (lessons fetched, lesson list shown) {ready_ms:.0} ms after navigation start; \
         lesson 07 interactive at {lesson_ms:.0} ms; lesson 05 at step=end loaded and interactive in {:.0} ms; \
         whole test {:.1} s",
        interactive_05.as_secs_f64() * 1000.0,
        started.elapsed().as_secs_f64()
    );
}

/// What the timeline measures in the browser: the smallest computed font
/// size of its texts, overlapping label boxes, and the axis's spacing.
/// The timeline's last lane's bottom edge and the window's height: every
/// lane is on the screen when the first is at most the second.
const LAST_LANE: &str =
    "const l = [...document.querySelectorAll('.timeline .lane-bg')].pop().getBoundingClientRect(); return [l.bottom, window.innerHeight]";

const TIMELINE_PROBE: &str = r#"
const svg = document.querySelector('[data-testid=timeline]');
const texts = [...svg.querySelectorAll('text')];
const minFont = Math.min(...texts.map(t => parseFloat(getComputedStyle(t).fontSize)));
const labels = [...svg.querySelectorAll('text.tl-label, .tick text, .lane-label, .lane-role, .break-label')]
  .map(t => ({ r: t.getBoundingClientRect(), text: t.textContent }))
  .filter(l => l.r.width > 0);
const overlaps = [];
for (let i = 0; i < labels.length; i++) for (let j = i + 1; j < labels.length; j++) {
  const a = labels[i].r, b = labels[j].r;
  const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
  const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
  if (w > 1 && h > 1) overlaps.push(labels[i].text + ' / ' + labels[j].text);
}
const ticks = [...svg.querySelectorAll('.tick')].map(t => ({ ms: +t.dataset.ms, x: t.querySelector('line').getBoundingClientRect().left }));
const breaks = [...svg.querySelectorAll('[data-testid=axis-break]')]
  .map(b => ({ from: +b.dataset.from, to: +b.dataset.to, w: b.querySelector('rect').getBoundingClientRect().width }));
// Between neighbouring ticks: the pixels and milliseconds of the linear
// stretch, i.e. less every marked break (a spread burst, a squeezed gap).
const perMs = [];
for (let i = 0; i + 1 < ticks.length; i++) {
  const [a, b] = [ticks[i], ticks[i + 1]];
  const inside = breaks.filter(br => br.from >= a.ms && br.to <= b.ms);
  perMs.push([b.x - a.x - inside.reduce((s, br) => s + br.w, 0), b.ms - a.ms - inside.reduce((s, br) => s + br.to - br.from, 0)]);
}
const svgBox = svg.getBoundingClientRect();
const titles = [...svg.querySelectorAll('[data-testid=band-title]')].map(t => {
  const r = t.getBoundingClientRect();
  return { text: t.textContent, inside: r.left >= svgBox.left - 0.5 && r.right <= svgBox.right + 0.5 };
});
// The labels under the marks wear a halo of the panel's colour, drawn
// under their letters, so arrows crossing a lane do not cross out words.
const markLabel = svg.querySelector('text.mark-label');
const halo = markLabel && {
  order: getComputedStyle(markLabel).paintOrder,
  stroke: getComputedStyle(markLabel).stroke,
  width: parseFloat(getComputedStyle(markLabel).strokeWidth),
  panel: getComputedStyle(svg.closest('.timeline-panel')).backgroundColor,
};
const arrow = svg.querySelector('.arrow');
// Labels cut by the edge of what the panel shows.
const view = svg.closest('.timeline-scroll').getBoundingClientRect();
const cut = labels.filter(l => l.r.left < view.left - 0.5 || l.r.right > view.right + 0.5).map(l => l.text);
return { minFont, labels: labels.length, overlaps, cut, perMs, titles, halo,
  dense: svg.classList.contains('dense'), arrowOpacity: arrow && +getComputedStyle(arrow).opacity,
  bands: svg.querySelectorAll('[data-testid=violation]').length,
  legend: svg.querySelectorAll('[data-testid=legend] .legend-item').length,
  svgWidth: svgBox.width, viewBox: svg.getAttribute('viewBox') };
"#;

/// Every lesson at its end, in presenter mode on a 1280×720 projector, in
/// both languages: the caption leaves the timeline at least 40 % of the
/// screen, every lane is on the screen, nothing is wider than it, no
/// timeline text is under 13 px and no two labels overlap.
/// (The lessons above are checked closely; this is the whole catalogue.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_lesson_fits_a_projector() {
    let dist = require_dist();
    let backend = Backend::start(&dist, 0);
    let base = format!("http://127.0.0.1:{}", backend.port);
    let (_driver, c) = browser().await;
    viewport(&c, 1280, 720).await;
    let ids: Vec<String> = locklab_core::lesson::builtin()
        .unwrap()
        .into_iter()
        .map(|l| l.id)
        .collect();
    assert!(ids.len() >= 36, "{ids:?}");
    for lang in ["en", "zh"] {
        for id in &ids {
            open(
                &c,
                &format!("{base}/?lang={lang}&lesson={id}&step=end&seed=7&present=1"),
            )
            .await;
            let r = eventually(&format!("lesson {id}'s caption and lanes"), || async {
                let r = js(
                    &c,
                    "const cap = document.querySelector('[data-testid=caption] [data-testid=caption-command]'); \
                     const lane = [...document.querySelectorAll('.timeline .lane-bg')].pop(); \
                     if (!cap || !lane) return null; \
                     return [document.querySelector('[data-testid=caption]').getBoundingClientRect().bottom, \
                             lane.getBoundingClientRect().bottom, window.innerHeight, \
                             document.documentElement.scrollWidth, window.innerWidth]",
                )
                .await;
                (!r.is_null()).then_some(r)
            })
            .await;
            let v = |i: usize| r[i].as_f64().unwrap();
            let what =
                format!("lesson {id} in {lang}: [caption bottom, last lane bottom, height, scroll width, width] = {r}");
            assert!(v(0) <= 0.6 * v(2), "the caption leaves the timeline room: {what}");
            assert!(v(1) <= v(2) + 1.0, "every lane on the screen: {what}");
            assert!(v(3) <= v(4), "nothing wider than the screen: {what}");
            let p = js(&c, TIMELINE_PROBE).await;
            assert!(
                p["minFont"].as_f64().unwrap() >= 13.0,
                "every timeline text ≥ 13 px: {what}: {p}"
            );
            assert_eq!(p["overlaps"], json!([]), "no two labels overlap: {what}: {p}");
            assert_eq!(p["cut"], json!([]), "no label cut by the panel's edge: {p}");
        }
    }
}

/// Issue 15: the timeline a room can read, at 1280×720 and 1440×900, in
/// normal and presenter mode: label sizes, no overlaps, a linear axis,
/// titled violation bands, the caption, the quiz gate, Space, the export,
/// and 中文 labels, label halos, the faint arrows of a race (18, 25);
/// screenshots of 05, 15, 17, 18 (five clients racing to five masters:
/// ten lanes), 22, the etcd and ZooKeeper lessons 43 and 44, and 45 (four
/// lock services on one screen) in both modes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeline_a_room_can_read() {
    let dist = require_dist();
    let backend = Backend::start(&dist, 0);
    let base = format!("http://127.0.0.1:{}", backend.port);
    let (driver, c) = browser().await;
    let mut banded = Vec::new();
    for (w, h) in [(1280, 720), (1440, 900)] {
        viewport(&c, w, h).await;
        for id in ["05", "13", "15", "16", "17", "18", "22", "25", "43", "44", "45"] {
            open(&c, &format!("{base}/?lang=en&lesson={id}&step=end&seed=7")).await;
            eventually(&format!("lesson {id}'s timeline"), || async {
                (count(&c, "[data-testid=timeline] .lane").await > 0).then_some(())
            })
            .await;
            let p = js(&c, TIMELINE_PROBE).await;
            let what = format!("lesson {id} at {w}×{h}: {p}");
            assert!(
                p["minFont"].as_f64().unwrap() >= 13.0,
                "every timeline text ≥ 13 px: {what}"
            );
            assert!(p["labels"].as_u64().unwrap() >= 5, "{what}");
            assert_eq!(p["overlaps"], json!([]), "no two labels overlap: {what}");
            assert_eq!(p["cut"], json!([]), "no label cut by the panel's edge: {p}");
            // [pixels, milliseconds] of linear axis between neighbouring
            // ticks: one scale everywhere, to the rounding of a pixel.
            let pairs: Vec<(f64, f64)> = p["perMs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| (v[0].as_f64().unwrap(), v[1].as_f64().unwrap()))
                .collect();
            let (px0, ms0) = *pairs
                .iter()
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap_or_else(|| panic!("two ticks: {what}"));
            let k = px0 / ms0;
            for (px, ms) in &pairs {
                assert!(
                    (px - k * ms).abs() < 1.0,
                    "the axis is linear between its marked breaks: {what}"
                );
            }
            assert!(p["legend"].as_u64().unwrap() >= 3, "the legend: {what}");
            let halo = &p["halo"];
            assert!(halo["order"].as_str().unwrap().starts_with("stroke"), "{what}");
            assert_eq!(halo["stroke"], halo["panel"], "a halo of the panel's colour: {what}");
            assert!(halo["width"].as_f64().unwrap() >= 3.0, "{what}");
            // Lessons 18 and 25 race five clients (to five masters in 18):
            // their hundreds of arrows are drawn faint, a story's are not.
            let race = ["18", "25"].contains(&id);
            assert_eq!(p["dense"], json!(race), "{what}");
            let opacity = p["arrowOpacity"].as_f64().unwrap();
            assert!(if race { opacity <= 0.5 } else { opacity == 1.0 }, "{what}");
            assert!(
                p["svgWidth"].as_f64().unwrap() > w as f64 * 0.6,
                "the timeline spans the content width: {what}"
            );
            if p["bands"].as_u64().unwrap() > 0 {
                let titles = p["titles"].as_array().unwrap();
                assert!(!titles.is_empty(), "a band has its title: {what}");
                assert!(
                    titles.iter().all(|t| t["inside"] == json!(true)),
                    "never cut off: {what}"
                );
                if w == 1280 {
                    banded.push(id);
                }
            }
            if ["05", "15", "17", "18", "22", "43", "44", "45"].contains(&id) {
                screenshot(&c, &format!("timeline-{id}-normal-{w}x{h}.png")).await;
                open(&c, &format!("{base}/?lang=en&lesson={id}&step=end&seed=7&present=1")).await;
                eventually("the caption", || async {
                    c.find(Locator::Css("[data-testid=caption]")).await.ok()
                })
                .await;
                screenshot(&c, &format!("timeline-{id}-present-{w}x{h}.png")).await;
                let hidden = js(
                    &c,
                    "return getComputedStyle(document.querySelector('[data-testid=lesson-list]')).display",
                )
                .await;
                assert_eq!(hidden, json!("none"), "presenter mode hides the sidebar");
                assert!(
                    text(&c, "[data-testid=caption-command]")
                        .await
                        .is_some_and(|t| !t.is_empty()),
                    "the caption"
                );
                let p = js(&c, TIMELINE_PROBE).await;
                assert!(p["minFont"].as_f64().unwrap() >= 13.0, "presenter mode: {p}");
                // Ten lanes (18) or four services (45) need compact rows,
                // at the biggest type that fits: on a 900 px screen that is
                // more than the 13 px floor.
                if h == 900 && id == "45" {
                    assert!(
                        p["minFont"].as_f64().unwrap() >= 15.0,
                        "presenter mode, lesson {id}: {p}"
                    );
                }
                // Every lane on the screen (the legend may need a scroll on a
                // 720 px projector when a lesson has eight lanes).
                let fits = js(&c, LAST_LANE).await;
                assert!(
                    fits[0].as_f64().unwrap() <= fits[1].as_f64().unwrap() + 1.0,
                    "presenter mode fits the lanes on the screen: {fits} {p}"
                );
                assert_eq!(p["overlaps"], json!([]), "no overlaps in presenter mode either: {p}");
                assert_eq!(p["cut"], json!([]), "no label cut by the panel's edge: {p}");
                // Lesson 18 ends on a metrics step: its figures are the
                // lab's words, set as prose on one line, where a monospace
                // face pushed the last word onto a line of its own at 1280.
                if id == "18" {
                    // Lesson 18 now ends on its validity exercise: the
                    // race's figures are one step earlier.
                    let step = last_metrics_step(id);
                    open(&c, &format!("{base}/?lang=en&lesson={id}&step={step}&seed=7&present=1")).await;
                    eventually("the caption's figures", || async {
                        let t = texts(&c, "[data-testid=caption-reply]").await;
                        t.first().filter(|t| !t.is_empty()).cloned()
                    })
                    .await;
                    // Its ten lanes at the race's end, compact at the
                    // biggest type that fits: above the floor at 900 px.
                    let p = js(&c, TIMELINE_PROBE).await;
                    screenshot(&c, &format!("timeline-18-metrics-present-{w}x{h}.png")).await;
                    if h == 900 {
                        assert!(p["minFont"].as_f64().unwrap() >= 15.0, "presenter mode, lesson 18: {p}");
                    }
                    // The next step's exercise box sits above the caption
                    // here: the lanes still fit the screen beside it.
                    let fits = js(&c, LAST_LANE).await;
                    assert!(
                        fits[0].as_f64().unwrap() <= fits[1].as_f64().unwrap() + 1.0,
                        "lesson 18's race fits beside the exercise box at {w}×{h}: {fits} {p}"
                    );
                    let r = js(
                        &c,
                        "const r = document.querySelector('[data-testid=caption-reply]'); \
                         const s = getComputedStyle(r); \
                         return [r.getBoundingClientRect().height, parseFloat(s.fontSize), s.fontFamily, r.textContent]",
                    )
                    .await;
                    let (height, size) = (r[0].as_f64().unwrap(), r[1].as_f64().unwrap());
                    // Part two's random delays: the three clients' figures.
                    let figures = r[3].as_str().unwrap();
                    assert!(figures.starts_with("acquired ") && figures.contains(" of 3 "), "{r}");
                    assert!(size >= 20.0, "the figures in the caption's large type: {r}");
                    assert!(height < 2.0 * size, "the figures on one line at {w}×{h}: {r}");
                    assert!(!r[2].as_str().unwrap().starts_with("ui-monospace"), "{r}");
                }
            }
        }
    }
    assert!(banded.contains(&"05"), "lesson 05 shows its band: {banded:?}");
    // Chinese labels are wider: lesson 45 in presenter mode still fits a
    // 720 px projector in 中文.
    viewport(&c, 1280, 720).await;
    open(&c, &format!("{base}/?lang=zh&lesson=45&step=end&seed=7&present=1")).await;
    eventually("the caption in Chinese", || async {
        c.find(Locator::Css("[data-testid=caption]")).await.ok()
    })
    .await;
    screenshot(&c, "timeline-45-present-zh-1280x720.png").await;
    let p = js(&c, TIMELINE_PROBE).await;
    assert!(p["minFont"].as_f64().unwrap() >= 13.0, "presenter mode in Chinese: {p}");
    assert_eq!(p["overlaps"], json!([]), "no overlaps in Chinese either: {p}");
    let fits = js(&c, LAST_LANE).await;
    assert!(
        fits[0].as_f64().unwrap() <= fits[1].as_f64().unwrap() + 1.0,
        "presenter mode fits the lanes on the screen in Chinese: {fits} {p}"
    );
    eprintln!("timeline: lessons with a titled violation band at their end: {banded:?}");

    // Narration reads as prose: lesson 16 ends on a step that lists three
    // ways a lock is lost even after WAIT answers 1, with `·` bullets. In
    // presenter mode it is a list in the regular weight (it was ten lines
    // of bold) and the caption leaves the timeline room; in the steps list
    // it is a list in the sans face (it was the file's hard line breaks in
    // monospace, words cut in two).
    open(&c, &format!("{base}/?lang=en&lesson=16&step=end&seed=7&present=1")).await;
    let say = eventually("lesson 16's last step in the caption", || async {
        let r = js(
            &c,
            "const s = document.querySelector('[data-testid=caption] [data-testid=caption-command]'); \
             if (!s || !s.querySelector('li')) return null; \
             return [s.querySelectorAll('li').length, parseInt(getComputedStyle(s).fontWeight), \
                     s.getBoundingClientRect().bottom]",
        )
        .await;
        (!r.is_null()).then_some(r)
    })
    .await;
    screenshot(&c, "narration-16-present-1280x720.png").await;
    assert_eq!(say[0], json!(3), "three ways to lose it, three items: {say}");
    assert!(say[1].as_u64().unwrap() < 600, "a long narration is not bold: {say}");
    assert!(
        say[2].as_f64().unwrap() < 0.7 * 720.0,
        "the caption leaves the timeline room: {say}"
    );
    open(&c, &format!("{base}/?lang=en&lesson=16&step=end&seed=7")).await;
    let shown = eventually("lesson 16's last step in the list", || async {
        let r = js(
            &c,
            "const s = document.querySelector('[data-testid=step][data-index=\"14\"] .shown'); \
             if (!s) return null; \
             const st = getComputedStyle(s); \
             return [s.querySelectorAll('li').length, st.whiteSpace, st.fontFamily]",
        )
        .await;
        (!r.is_null()).then_some(r)
    })
    .await;
    assert_eq!(shown[0], json!(3), "{shown}");
    assert_eq!(shown[1], json!("normal"), "{shown}");
    assert!(!shown[2].as_str().unwrap().starts_with("ui-monospace"), "{shown}");
    // An empty timeline points at the console only where the console is:
    // not in presenter mode, which hides it.
    open(&c, &format!("{base}/?lang=en&lesson=16&seed=7&present=1")).await;
    eventually("lesson 16's caption and timeline", || async {
        c.find(Locator::Css("[data-testid=caption]")).await.ok()?;
        c.find(Locator::Css("svg[data-testid=timeline]")).await.ok()
    })
    .await;
    assert_eq!(
        count(&c, "[data-testid=timeline] text.empty").await,
        0,
        "no console hint in presenter mode"
    );
    open(&c, &format!("{base}/?lang=en&lesson=16&seed=7")).await;
    eventually("the console hint on an empty timeline", || async {
        (count(&c, "[data-testid=timeline] text.empty").await == 1).then_some(())
    })
    .await;

    // `p` toggles presenter mode; PageDown steps; the dark theme.
    viewport(&c, 1280, 720).await;
    open(&c, &format!("{base}/?lang=en&lesson=05&seed=7")).await;
    js(&c, "document.activeElement.blur(); return null").await;
    press(&c, 'p').await;
    eventually("presenter mode by key", || async {
        (attr(&c, "[data-testid=app]", "data-present").await? == "true").then_some(())
    })
    .await;
    press(&c, char::from(Key::PageDown)).await;
    step_to(&c, "1").await;
    click(&c, "[data-testid=theme]").await;
    eventually("the dark theme", || async {
        js(
            &c,
            "return document.querySelector('[data-testid=app]').classList.contains('dark') || null",
        )
        .await
        .as_bool()
    })
    .await;
    screenshot(&c, "timeline-05-present-dark-1280x720.png").await;
    press(&c, 'p').await;
    // A reply that did nothing is a hollow ring in its owner's colour, on
    // the lanes and in the legend; the dark theme once drew the ring in the
    // panel's colour, so the mark vanished on a projector.
    open(&c, &format!("{base}/?lang=en&lesson=40&step=end&seed=7&theme=dark")).await;
    let rings = eventually("lesson 40's rings in the dark theme", || async {
        let r = js(
            &c,
            "const panel = getComputedStyle(document.querySelector('.timeline-panel')).backgroundColor; \
             const rings = [...document.querySelectorAll('[data-testid=timeline] .mark.nil circle')] \
                 .map(e => getComputedStyle(e).stroke); \
             return rings.length ? [panel, rings] : null",
        )
        .await;
        (!r.is_null()).then_some(r)
    })
    .await;
    let panel = rings[0].as_str().unwrap();
    for ring in rings[1].as_array().unwrap() {
        let ring = ring.as_str().unwrap();
        assert!(
            ring != panel && ring != "none",
            "a ring stands out of the panel: {rings}"
        );
    }

    // Space plays, and never scrolls the page.
    open(&c, &format!("{base}/?lang=en&lesson=05&seed=7")).await;
    js(
        &c,
        "const m = document.querySelector('main'); m.scrollTop = 120; return null",
    )
    .await;
    click(&c, ".steps-title").await;
    let before = js(&c, "return document.querySelector('main').scrollTop").await;
    assert!(before.as_f64().unwrap() > 0.0, "main scrolls at 1280×720");
    press(&c, ' ').await;
    eventually("Space to start playing", || async {
        (text(&c, "[data-testid=step-name]").await? != "0").then_some(())
    })
    .await;
    let after = js(&c, "return document.querySelector('main').scrollTop").await;
    assert_eq!(before, after, "Space does not scroll");
    assert_eq!(js(&c, "return document.scrollingElement.scrollTop").await, json!(0));

    // The export: owner colours, the title with the lesson id, the legend.
    open(&c, &format!("{base}/?lang=en&lesson=05&step=end&seed=7")).await;
    click(&c, "[data-testid=export-svg]").await;
    let href = js(
        &c,
        "return decodeURIComponent(document.querySelector('[data-testid=export-svg]').getAttribute('href'))",
    )
    .await;
    let svg = href.as_str().unwrap();
    assert!(svg.starts_with("data:image/svg+xml"), "{svg}");
    assert!(
        svg.contains("data-testid=\"legend\""),
        "the legend travels with the file"
    );
    assert!(svg.contains("locklab 05"), "the title names the lesson");
    let owners: std::collections::BTreeSet<&str> = ["owner-0", "owner-1", "owner-2"]
        .into_iter()
        .filter(|o| svg.contains(&format!("bar {o}")))
        .collect();
    assert!(owners.len() >= 2, "two owners' bars: {owners:?}");
    assert!(svg.contains("#c4631b") && svg.contains("#2e8b57"), "with their colours");

    // Interview mode: the question blocks stepping until it is answered.
    open(&c, &format!("{base}/?lang=en&lesson=01")).await;
    click(&c, "[data-testid=quiz-mode]").await;
    eventually("the question", || async {
        c.find(Locator::Css("[data-testid=quiz]")).await.ok()
    })
    .await;
    js(&c, "document.activeElement.blur(); return null").await;
    press(&c, char::from(Key::Right)).await;
    click(&c, "[data-testid=step-forward]").await;
    // Give a wrongly unblocked step every chance to land before looking.
    click(&c, "[data-testid=quiz-mode]").await;
    click(&c, "[data-testid=quiz-mode]").await;
    assert_eq!(
        text(&c, "[data-testid=step-name]").await.as_deref(),
        Some("0"),
        "the quiz blocks stepping"
    );

    // 中文: no Latin-only label except commands, keys, replies and names.
    for id in ["05", "15", "43", "44", "45"] {
        open(&c, &format!("{base}/?lang=zh&lesson={id}&step=end&seed=7")).await;
        let latin = js(
            &c,
            r#"
const skip = 'code, pre, kbd, .shown, .actual, .expected, .reply, [data-testid=console], .id, .wordmark, ' +
  '.mark-label, .bar-label, .tick, .lane-label, .lane-role, .zoom, .counter, .speeds, .caption-cmd, .caption-reply, ' +
  '[data-lang], .score, .lesson-score, .driver-note, .badge.server, title, .step .actor';
const bad = [];
for (const el of document.querySelectorAll('.app *')) {
  if (el.closest(skip)) continue;
  const own = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim();
  if (!own || /[\u2e80-\u9fff]/.test(own)) continue;
  if (/[A-Za-z]{3,}/.test(own) && el.getClientRects().length) bad.push(el.tagName + ': ' + own);
}
return bad;
"#,
        )
        .await;
        assert_eq!(latin, json!([]), "lesson {id} in 中文");
        screenshot(&c, &format!("timeline-{id}-zh-1280x720.png")).await;
    }
    c.close().await.unwrap();
    drop(driver);
}

/// The text of every element matching `css`, in order.
async fn texts(c: &Client, css: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in c.find_all(Locator::Css(css)).await.unwrap_or_default() {
        out.push(e.text().await.unwrap_or_default());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_driver_in_headless_chromium() {
    let dist = require_dist();
    locklab_tests::server::redis_server_binary().expect(locklab_tests::server::NOT_FOUND);
    let mut backend = Backend::start(&dist, 0);
    let base = format!("http://127.0.0.1:{}", backend.port);
    let (driver, c) = browser().await;

    // The switch: the free lab's console on a real, managed redis-server.
    open(&c, &format!("{base}/?lang=en")).await;
    c.find(Locator::Css("[data-testid=driver][data-driver=real]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let badge = eventually("the real server's badge", || async {
        let b = c
            .find(Locator::Css("[data-testid=real-server][data-state=ok]"))
            .await
            .ok()?;
        let t = b.text().await.ok()?;
        t.contains("redis 7.").then_some(t)
    })
    .await;
    assert!(badge.contains("managed"), "{badge}");
    assert_eq!(
        c.current_url().await.unwrap().query(),
        Some("lang=en&seed=1&driver=real")
    );
    assert_eq!(run(&c, "SET lock:order:1 token-A-111 NX PX 30000").await, "OK");
    tab(&c, "B").await;
    assert_eq!(run(&c, "SET lock:order:1 token-B-222 NX PX 30000").await, "(nil)");
    assert_eq!(run(&c, "GET lock:order:1").await, "\"token-A-111\"");
    // The sandbox: refused before it reaches Redis, in redis-cli's shape.
    assert!(run(&c, "FLUSHALL").await.starts_with("(error)"));
    let events = js(
        &c,
        "return Number(document.querySelector('[data-testid=timeline]').dataset.events)",
    )
    .await;
    assert!(
        events.as_f64().is_some_and(|n| n >= 4.0),
        "the real commands on the timeline: {events}"
    );
    // Every lesson plays on the managed topologies (49's Redis 8.4
    // commands are sent as Lua, 51's clock jump moves a managed server's
    // clock): none is marked simulator-only (the user's own server marks
    // those needing more than one node or a fault of the server itself:
    // `the_real_driver_says_when_redis_goes_away`).
    let catalogue = locklab_core::lesson::builtin().unwrap().len();
    assert_eq!(count(&c, "[data-testid=lesson-item]").await, catalogue);
    assert_eq!(count(&c, "[data-testid=sim-only]").await, 0);

    // Lesson 07 on real redis-server, step by step, with the article's replies.
    let steps = lesson_07_steps();
    c.find(Locator::Css("[data-testid=lesson-item][data-lesson='07']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    eventually("lesson 07 accepted by the backend", || async {
        (count(&c, "[data-testid=step-busy]").await == 0 && count(&c, "[data-testid=step]").await == steps)
            .then_some(())
    })
    .await;
    step_to_end(&c, "07", steps).await;
    let replies: Vec<String> = texts(&c, "[data-testid=step-reply]")
        .await
        .into_iter()
        .map(|r| r.trim_start_matches("actual").trim().to_owned())
        .collect();
    assert_eq!(replies, LESSON_07_REPLIES);
    assert_eq!(count(&c, "[data-testid=step-mismatch]").await, 0);
    assert!(
        texts(&c, "[data-testid=step-note]").await.is_empty(),
        "real time (1×): nothing was changed"
    );
    assert_eq!(
        c.current_url().await.unwrap().query(),
        Some("lang=en&lesson=07&step=end&seed=1&driver=real")
    );
    outcome_ok(&c).await;
    assert!(
        count(&c, "[data-testid=lock-bar]").await >= 2,
        "A's and B's locks from the real run"
    );
    // Off script on the real run: A's bare DEL took B's lock.
    tab(&c, "B").await;
    assert_eq!(run(&c, "GET lock:order:1001").await, "(nil)");
    // A step back is a fresh real run played to the step before the end.
    js(&c, "document.activeElement.blur(); return null").await;
    press(&c, char::from(Key::Left)).await;
    let back = (steps - 1).to_string();
    eventually("← to replay to the step before the end", || async {
        (text(&c, "[data-testid=step-name]").await? == back && count(&c, "[data-testid=step-busy]").await == 0)
            .then_some(())
    })
    .await;
    // Every step has a reply (beliefs ride on the commands): all but the last are shown.
    assert_eq!(count(&c, "[data-testid=step-reply]").await, LESSON_07_REPLIES.len() - 1);
    screenshot(&c, "browser-real-lesson-07-en.png").await;
    // 10× time: the run starts again, and each step says what was sent instead.
    c.find(Locator::Css("[data-testid=factor][data-factor='10']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    eventually("the run restarted at 10×", || async {
        (count(&c, "[data-testid=step-reply]").await == 0 && count(&c, "[data-testid=step-busy]").await == 0)
            .then_some(())
    })
    .await;
    c.find(Locator::Css("[data-testid=step-forward]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let note = eventually("the compression note on step 1", || async {
        text(&c, "[data-testid=step-note]").await
    })
    .await;
    assert!(note.contains("PX 1500"), "{note}");
    c.find(Locator::Css("[data-testid=factor][data-factor='1']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    for n in 1..=4 {
        c.find(Locator::Css("[data-testid=step-forward]"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        eventually(&format!("real step {n} again"), || async {
            (count(&c, "[data-testid=step-reply]").await == n).then_some(())
        })
        .await;
    }

    // The backend goes away: a banner says so; it comes back: the banner
    // goes and the lesson is played again to where it was.
    backend.kill();
    eventually("the lost-connection banner", || async {
        (c.find(Locator::Css("[data-testid=real-banner][data-kind=backend]"))
            .await
            .ok()?)
        .text()
        .await
        .ok()
    })
    .await;
    screenshot(&c, "browser-real-banner-en.png").await;
    let _backend = Backend::start(&dist, backend.port);
    eventually("the banner to go after the reconnect", || async {
        (count(&c, "[data-testid=real-banner]").await == 0
            && count(&c, "[data-testid=real-server][data-state=ok]").await == 1)
            .then_some(())
    })
    .await;
    eventually("lesson 07 replayed to step 4 on the new session", || async {
        (count(&c, "[data-testid=step-reply]").await == 4 && count(&c, "[data-testid=step-busy]").await == 0)
            .then_some(())
    })
    .await;
    assert_eq!(text(&c, "[data-testid=step-name]").await.as_deref(), Some("4"));

    // Lesson 43 on a real etcd cluster the backend starts for it, at 10×:
    // every step as the simulator answers it, etcd's members as lanes.
    // Lesson 45 on a Redis, three Redlock masters, etcd and ZooKeeper
    // together: the ten nodes as the simulator's lanes.
    play_real_lesson_to_end(
        &c,
        ("43", 10),
        &["etcd 3."],
        &["etcd1", "etcd3"],
        &["two holders (A, B)"],
    )
    .await;
    // Each service's driver stamps its overlap a few ms apart: one band,
    // as on the simulator.
    play_real_lesson_to_end(
        &c,
        ("45", 10),
        &["redis 7.", "etcd 3.", "ZooKeeper 3."],
        &["redis", "r1–3", "etcd1–3", "zk1–3"],
        &["two holders of 4 locks (A, B)", "stale write accepted (A, B)"],
    )
    .await;
    // Lesson 18 on five real masters in real time (its figures are waits
    // of a few ms): r5 slowed by the delaying proxy, A giving it up after
    // 50 ms, the five-way race; every step met, no band.
    play_real_lesson_to_end(&c, ("18", 1), &["redis 7.", "redlock5"], &["r1", "r5", "C"], &[]).await;

    c.close().await.unwrap();
    drop(driver);
}

/// Lesson `id` from the real driver's lesson list, at 10×, on a server
/// whose badge says each of `badge`: played straight to its end (⇥:
/// between two steps taken by hand, real leases run out in wall time, as
/// they would for anyone), every step as the simulator answers it, the
/// outcome as taught, `lanes` among the lanes; screenshots in English and
/// Chinese at 1280×720 and 1440×900; its red bands titled `bands`.
async fn play_real_lesson_to_end(
    c: &Client,
    (id, factor): (&str, u64),
    badge: &[&str],
    lanes: &[&str],
    bands: &[&str],
) {
    click(c, &format!("[data-testid=lesson-item][data-lesson='{id}']")).await;
    click(c, &format!("[data-testid=factor][data-factor='{factor}']")).await;
    // A four-service lesson (45) starts a topology of its own first: Redis,
    // five Redlock masters, etcd and ZooKeeper's JVMs; on 2 busy cores that
    // took over 30 s once in CI.
    harness::eventually(TOPOLOGY_WAIT, &format!("lesson {id} started at {factor}×"), || async {
        let shown = text(c, "[data-testid=real-server]").await.unwrap_or_default();
        let on = c
            .find(Locator::Css(&format!("[data-testid=factor][data-factor='{factor}']")))
            .await
            .ok()?
            .attr("aria-pressed")
            .await
            .ok()??;
        (count(c, "[data-testid=step-busy]").await == 0
            && badge.iter().all(|b| shown.contains(b))
            && on == "true"
            && (factor == 1 || shown.contains(&format!("÷{factor}"))))
        .then_some(())
    })
    .await;
    // Real servers in real time: lesson 18's split vote holds only while
    // the three clients' rounds stay within 20 ms of each other, which a
    // loaded 2-core machine can break (CI once: "acquired 3 of 3" at its
    // step 26). A run with a step answered otherwise is replayed from the
    // start (Home, then End), up to three runs, and the last must match
    // the simulator at every step: a real difference fails all three.
    let mut mismatched = json!([]);
    for run in 0..3 {
        if run > 0 {
            eprintln!("lesson {id}, real run {run}: steps answered otherwise, replaying: {mismatched}");
            js(
                c,
                "document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Home'})); return 1",
            )
            .await;
            harness::eventually(TOPOLOGY_WAIT, &format!("lesson {id} back at its start"), || async {
                (text(c, "[data-testid=step-name]").await? != "end" && count(c, "[data-testid=step-busy]").await == 0)
                    .then_some(())
            })
            .await;
        }
        click(c, "[data-testid=end]").await;
        // At 1× a lesson takes its own time (18: about 40 s).
        harness::eventually(
            Duration::from_secs(180),
            &format!("lesson {id} played to its end"),
            || async {
                (text(c, "[data-testid=step-name]").await? == "end" && count(c, "[data-testid=step-busy]").await == 0)
                    .then_some(())
            },
        )
        .await;
        mismatched = js(
            c,
            "return [...document.querySelectorAll('[data-testid=step-mismatch]')].map(m => m.closest('li').innerText)",
        )
        .await;
        if mismatched == json!([]) {
            break;
        }
    }
    assert_eq!(
        mismatched,
        json!([]),
        "steps of lesson {id} answered otherwise, three runs"
    );
    outcome_ok(c).await;
    let shown = texts(c, ".lane-label").await.join(" ");
    assert!(lanes.iter().all(|l| shown.contains(l)), "{shown}");
    let titles = js(
        c,
        "return [...document.querySelectorAll('[data-testid=violation]')].map(b => b.dataset.title)",
    )
    .await;
    assert_eq!(titles, json!(bands), "lesson {id}'s bands");
    for (w, h) in [(1280, 720), (1440, 900)] {
        c.set_window_size(w, h).await.unwrap();
        screenshot(c, &format!("browser-real-lesson-{id}-en-{w}x{h}.png")).await;
    }
    // In Chinese: the same run's page, still at its end and met.
    click(c, "[data-testid=lang-switch] [data-lang=zh]").await;
    eventually(&format!("lesson {id} in 中文 at its end"), || async {
        let step = c
            .find(Locator::Css("[data-testid=step-name]"))
            .await
            .ok()?
            .attr("data-step")
            .await
            .ok()??;
        (step == "end" && count(c, "[data-testid=step-busy]").await == 0).then_some(())
    })
    .await;
    outcome_ok(c).await;
    for (w, h) in [(1280, 720), (1440, 900)] {
        c.set_window_size(w, h).await.unwrap();
        screenshot(c, &format!("browser-real-lesson-{id}-zh-{w}x{h}.png")).await;
    }
    click(c, "[data-testid=lang-switch] [data-lang=en]").await;
}

/// On the user's own server: no fault buttons, and when that server dies
/// behind a running backend, the banner says it is Redis that went away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_driver_says_when_redis_goes_away() {
    let dist = require_dist();
    let server = locklab_tests::RedisServer::start();
    let backend = Backend::start_with(&dist, 0, Some(server.url()));
    let base = format!("http://127.0.0.1:{}", backend.port);
    let (driver, c) = browser().await;
    open(&c, &format!("{base}/?lang=en&driver=real")).await;
    let badge = eventually("the badge of the user's own server", || async {
        let t = text(&c, "[data-testid=real-server][data-state=ok]").await?;
        t.contains("your own server").then_some(t)
    })
    .await;
    assert!(badge.contains("redis 7."), "{badge}");
    assert_eq!(run(&c, "SET lock:order:1 token-A-111 NX PX 30000").await, "OK");
    // A page opened on the real driver never fetches the simulator.
    let engine = js(&c, ENGINE_FETCHES).await;
    assert_eq!(engine, json!(0), "the engine module is not fetched on the real driver");
    assert_eq!(
        count(&c, "[data-testid=real-external]").await,
        1,
        "the toolbox says it touches nothing"
    );
    assert_eq!(count(&c, "[data-testid=real-crash]").await, 0);
    // Lessons needing more than one node are marked simulator-only here.
    eventually("lesson 15 marked simulator-only", || async {
        (count(&c, "[data-testid=lesson-item][data-lesson='15'] [data-testid=sim-only]").await == 1).then_some(())
    })
    .await;
    drop(server);
    let banner = eventually("the Redis-is-gone banner", || async {
        text(&c, "[data-testid=real-banner][data-kind=redis]").await
    })
    .await;
    assert!(banner.contains("cannot reach Redis"), "{banner}");
    assert!(
        run(&c, "GET lock:order:1").await.starts_with("(error)"),
        "a command says so too"
    );
    screenshot(&c, "browser-real-redis-gone-en.png").await;
    c.close().await.unwrap();
    drop(driver);
}

/// A page whose simulator module does not load (here: `engine_bg.wasm`
/// missing from a copy of `dist/`) says so in the lesson, in either
/// language, and still shows what it has without the engine: the steps,
/// program steps included (worded from the lesson file, not decoded), and
/// the step the URL asks for, on the slider as on the counter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_simulator_that_does_not_load_says_so() {
    let dist = require_dist();
    let broken = std::env::temp_dir().join(format!("locklab-dist-no-engine-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&broken);
    std::fs::create_dir_all(&broken).unwrap();
    for entry in std::fs::read_dir(&dist).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_file() && !name.starts_with("engine_bg.wasm") {
            std::fs::copy(&path, broken.join(&name)).unwrap();
        }
    }
    let backend = Backend::start(&broken, 0);
    let base = format!("http://127.0.0.1:{}", backend.port);
    let (driver, c) = browser().await;
    for (w, h) in [(1280, 720), (1440, 900)] {
        viewport(&c, w, h).await;
        for (lang, failed, program) in [
            (
                "en",
                "the simulator did not load",
                "program: Redlock on lock:order:1001 (TTL 10000 ms)",
            ),
            (
                "zh",
                "模拟器未能载入",
                "程序：在 lock:order:1001 上执行 Redlock（TTL 10000 ms）",
            ),
        ] {
            c.goto(&format!("{base}/?lang={lang}&lesson=17&step=3&driver=sim"))
                .await
                .unwrap();
            eventually("the page to mark its engine failed", || async {
                let engine = js(&c, "return document.documentElement.dataset.engine || null").await;
                (engine.as_str()? == "failed").then_some(())
            })
            .await;
            let error = eventually("the lesson's error", || async {
                text(&c, "[data-testid=lesson-error]").await
            })
            .await;
            assert!(error.contains(failed), "{error}");
            assert_eq!(
                attr(&c, "[data-testid=step-name]", "data-step").await.as_deref(),
                Some("3")
            );
            let scrub = js(&c, "return document.querySelector('[data-testid=scrub]').value").await;
            assert_eq!(scrub, json!("3"), "the slider shows the step the counter does");
            let steps = js(
                &c,
                "return [...document.querySelectorAll('[data-testid=step]')].map(e => e.textContent)",
            )
            .await;
            let steps: Vec<String> = serde_json::from_value(steps).unwrap();
            assert!(steps.iter().any(|t| t.contains(program)), "{steps:?}");
            js(&c, "window.scrollTo(0, 0)").await;
            screenshot(&c, &format!("browser-engine-failed-{lang}-{w}x{h}.png")).await;
        }
    }
    c.close().await.unwrap();
    drop(driver);
    drop(backend);
    let _ = std::fs::remove_dir_all(&broken);
}

async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .click()
        .await
        .unwrap();
}

async fn step_to(c: &Client, name: &str) {
    eventually(&format!("step {name}"), || async {
        (text(c, "[data-testid=step-name]").await? == name).then_some(())
    })
    .await;
}

/// Lesson 07: a line typed off script, then a step back and forward: the
/// console shows it again (the session replays it).
async fn off_script_survives_a_step_back(c: &Client, base: &str) {
    open(c, &format!("{base}/?lang=en&lesson=07&step=3")).await;
    tab(c, "B").await;
    assert_eq!(run(c, "GET lock:order:1001").await, "\"token-B-222\"");
    js(c, "document.activeElement.blur(); return null").await;
    click(c, "[data-testid=step-back]").await;
    step_to(c, "2").await;
    eventually("B's console without the later line", || async {
        (count(c, "[data-testid=console-reply]").await == 0).then_some(())
    })
    .await;
    click(c, "[data-testid=step-forward]").await;
    step_to(c, "3").await;
    eventually("the off-script line back in B's console", || async {
        let replies = c.find_all(Locator::Css("[data-testid=console-reply]")).await.ok()?;
        (replies.last()?.text().await.ok()? == "\"token-B-222\"").then_some(())
    })
    .await;
    assert_eq!(
        attr(c, "[data-testid=off-script-count]", "data-count").await.as_deref(),
        Some("1")
    );
    off_script_changes_the_outcome(c, base).await;
}

/// Issue 15: lesson 06 holds as the article says, until A deletes B's lock
/// off script; the outcome box then says that this, named, is why — in
/// either language, looked at on a projector and a laptop.
async fn off_script_changes_the_outcome(c: &Client, base: &str) {
    for (lang, named) in [
        ("en", "A typed `DEL lock:order:1001`"),
        ("zh", "A 输入了 `DEL lock:order:1001`"),
    ] {
        open(c, &format!("{base}/?lang={lang}&lesson=06&step=5")).await;
        tab(c, "A").await;
        assert_eq!(run(c, "DEL lock:order:1001").await, "(integer) 1");
        js(c, "document.activeElement.blur(); return null").await;
        click(c, "[data-testid=end]").await;
        let why = eventually("the outcome box naming the off-script DEL", || async {
            text(c, "[data-testid=outcome-changed]").await
        })
        .await;
        assert!(why.contains(named), "{why}");
        assert_eq!(
            attr(c, "[data-testid=outcome]", "data-ok").await.as_deref(),
            Some("false")
        );
        for (w, h) in [(1280, 720), (1440, 900)] {
            viewport(c, w, h).await;
            js(
                c,
                "document.querySelector('[data-testid=outcome]').scrollIntoView(); return null",
            )
            .await;
            screenshot(c, &format!("browser-06-off-script-outcome-{lang}-{w}x{h}.png")).await;
        }
    }
}

/// Lesson 05 in Chinese: its world steps (a fault, a wait, a belief) are
/// worded in Chinese too.
async fn world_steps_read_in_chinese(c: &Client, base: &str) {
    open(c, &format!("{base}/?lang=zh&lesson=05")).await;
    let mut shown = Vec::new();
    for el in c.find_all(Locator::Css("[data-testid=step] .shown")).await.unwrap() {
        shown.push(el.text().await.unwrap());
    }
    assert!(shown.iter().any(|s| s.starts_with("故障：暂停 A")), "{shown:?}");
    assert!(
        shown.iter().all(|s| !s.starts_with("FAULT") && !s.contains("believes")),
        "{shown:?}"
    );
    // The lab's own answers read in Chinese too: a metrics step's figures
    // (lesson 18) and a write's verdict (lesson 22), replied and expected,
    // in the steps list and in presenter mode's caption.
    for (id, zh, en) in [("18", "获得锁", "acquired"), ("22", "被拒绝", "rejected")] {
        open(c, &format!("{base}/?lang=zh&lesson={id}&step=end")).await;
        let replies = eventually(&format!("lesson {id}'s replies"), || async {
            let texts = texts(c, "[data-testid=step-reply]").await;
            texts.iter().any(|t| t.contains(zh)).then_some(texts)
        })
        .await;
        assert!(replies.iter().all(|t| !t.contains(en)), "lesson {id}: {replies:?}");
        let expected = texts(c, "[data-testid=step-expected]").await;
        assert!(expected.iter().all(|t| !t.contains(en)), "lesson {id}: {expected:?}");
    }
    let step = last_metrics_step("18");
    open(c, &format!("{base}/?lang=zh&lesson=18&step={step}&present=1")).await;
    let reply = eventually("the caption's figures", || async {
        let t = texts(c, "[data-testid=caption-reply]").await;
        t.first().filter(|t| !t.is_empty()).cloned()
    })
    .await;
    assert!(reply.starts_with("获得锁 ") && reply.contains(" / 3 次"), "{reply}");
}

/// Interview mode on lesson 01: a right and a wrong prediction, the
/// verdicts and the lesson's explanation, a step back that asks again
/// without counting twice, the score in the panel and the lesson list, a
/// reload that keeps it, and a reset.
async fn interview_mode_keeps_score(c: &Client, base: &str) {
    open(c, &format!("{base}/?lang=en&lesson=01")).await;
    js(c, "localStorage.clear(); return null").await;
    click(c, "[data-testid=quiz-mode]").await;
    let predict = |guess: &'static str| async move {
        let input = eventually("the prediction box", || async {
            c.find(Locator::Css("[data-testid=quiz] [data-testid=quiz-input]"))
                .await
                .ok()
        })
        .await;
        input
            .send_keys(&format!("{guess}{}", char::from(Key::Enter)))
            .await
            .unwrap();
    };
    predict("OK").await;
    step_to(c, "1").await;
    eventually("the right verdict", || async {
        (count(c, "[data-testid=prediction][data-right=true]").await == 1).then_some(())
    })
    .await;
    // Step 2 (B's SET NX) asks at once: A's belief rides on its SET.
    predict("OK").await;
    step_to(c, "2").await;
    let wrong = eventually("the wrong verdict", || async {
        text(c, "[data-testid=prediction][data-right=false]").await
    })
    .await;
    assert!(wrong.contains("(nil)"), "the verdict names the reply: {wrong}");
    let explain = text(c, "[data-testid=step][data-index='1'] [data-testid=step-explain]")
        .await
        .unwrap();
    assert!(explain.contains("the NX condition fails"), "{explain}");
    let score = || async {
        Some((
            attr(c, "[data-testid=score]", "data-right").await?,
            attr(c, "[data-testid=score]", "data-total").await?,
        ))
    };
    eventually("score 1/2", || async {
        (score().await? == ("1".into(), "2".into())).then_some(())
    })
    .await;
    let in_list = "[data-testid=lesson-item][data-lesson='01'] [data-testid=lesson-score]";
    eventually("1/2 in the lesson list", || async {
        (text(c, in_list).await? == "1/2").then_some(())
    })
    .await;

    // Back one step: asked again; right this time, but the first try counts.
    click(c, "[data-testid=step-back]").await;
    step_to(c, "1").await;
    predict("nil").await;
    step_to(c, "2").await;
    eventually("the new verdict", || async {
        (count(
            c,
            "[data-testid=step][data-index='1'] [data-testid=prediction][data-right=true]",
        )
        .await
            == 1)
            .then_some(())
    })
    .await;
    assert_eq!(
        score().await,
        Some(("1".to_owned(), "2".to_owned())),
        "no step counts twice"
    );
    screenshot(c, "browser-interview-en.png").await;

    c.refresh().await.unwrap();
    eventually("the score after a reload", || async {
        (score().await? == ("1".into(), "2".into()) && text(c, in_list).await? == "1/2").then_some(())
    })
    .await;
    let stored = js(c, "return localStorage.getItem('locklab.score.01')").await;
    assert_eq!(stored, json!("10"));
    click(c, "[data-testid=score-reset]").await;
    eventually("the score reset", || async {
        (count(c, "[data-testid=score]").await == 0 && count(c, in_list).await == 0).then_some(())
    })
    .await;
}

/// The timeline, zoomed in, pans by dragging and with Shift+→ (which does
/// not step the lesson).
async fn timeline_pans(c: &Client, base: &str) {
    open(c, &format!("{base}/?lang=en&lesson=05&step=end&seed=7")).await;
    click(c, "[data-testid=zoom-in]").await;
    click(c, "[data-testid=zoom-in]").await;
    eventually("4× zoom", || async {
        (text(c, "[data-testid=zoom]").await? == "4×").then_some(())
    })
    .await;
    let scroll = "document.querySelector('[data-testid=timeline-scroll]')";
    let left = || async { js(c, &format!("return {scroll}.scrollLeft")).await.as_f64() };
    // Zoom keeps the present (the end of the lesson) in view.
    let now_in_view = js(
        c,
        &format!(
            "const s = {scroll}.getBoundingClientRect(), n = document.querySelector('.timeline .now').getBoundingClientRect(); \
             return n.left >= s.left && n.left <= s.right"
        ),
    )
    .await;
    assert_eq!(now_in_view, json!(true), "zooming keeps the current step in view");
    js(c, &format!("{scroll}.scrollLeft = 0; return null")).await;
    assert_eq!(left().await, Some(0.0));
    let plot = c.find(Locator::Css("[data-testid=timeline-scroll]")).await.unwrap();
    let drag = MouseActions::new("mouse".to_owned())
        .then(PointerAction::MoveToElement {
            element: plot,
            duration: None,
            x: 100.0,
            y: 0.0,
        })
        .then(PointerAction::Down {
            button: MOUSE_BUTTON_LEFT,
        })
        .then(PointerAction::MoveBy {
            duration: Some(Duration::from_millis(100)),
            x: -300.0,
            y: 0.0,
        })
        .then(PointerAction::Up {
            button: MOUSE_BUTTON_LEFT,
        });
    c.perform_actions(drag).await.unwrap();
    let dragged = eventually("the drag to pan", || async { left().await.filter(|x| *x >= 250.0) }).await;
    assert!(!js(c, &format!("return {scroll}.classList.contains('dragging')"))
        .await
        .as_bool()
        .unwrap());
    js(c, &format!("{scroll}.focus(); return null")).await;
    let keys = KeyActions::new("keyboard".to_owned())
        .then(KeyAction::Down {
            value: Key::Shift.into(),
        })
        .then(KeyAction::Down {
            value: Key::Right.into(),
        })
        .then(KeyAction::Up {
            value: Key::Right.into(),
        })
        .then(KeyAction::Up {
            value: Key::Shift.into(),
        });
    c.perform_actions(keys).await.unwrap();
    eventually("Shift+→ to pan", || async { left().await.filter(|x| *x > dragged) }).await;
    assert_eq!(
        text(c, "[data-testid=step-name]").await.as_deref(),
        Some("end"),
        "Shift+→ is not a step"
    );
}

/// Issue 16: the scripts that aborted or froze the simulator, typed into the
/// browser app's console: the wasm build answers each with an error (a
/// stack overflow would have killed the page) and stays interactive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_scripts_leave_the_page_interactive() {
    let dist = require_dist();
    let backend = Backend::start(&dist, 0);
    let base = format!("http://127.0.0.1:{}", backend.port);
    let (_driver, c) = browser().await;
    open(&c, &format!("{base}/?lang=en")).await;
    let deep = run(
        &c,
        "EVAL \"return {string.find(string.rep('a', 20000), string.rep('a?', 20000))}\" 0",
    )
    .await;
    assert!(deep.contains("pattern too complex"), "{deep}");
    // Up to the bound, the matcher runs natively in the page.
    let bound = run(
        &c,
        "EVAL \"return {string.find(string.rep('a', 1999), string.rep('a?', 1999))}\" 0",
    )
    .await;
    assert!(bound.contains("(integer) 1999"), "{bound}");
    let native = run(
        &c,
        "EVAL \"local s = string.rep('x', 4000000) for i = 1, 8000 do s:find('y', 1, true) end\" 0",
    )
    .await;
    assert!(native.contains("the simulator stopped it after"), "{native}");
    let sort = run(&c, "EVAL \"local t = {} for i = 1, 200000 do t[i] = (i * 7919) % 200000 end for i = 1, 200 do table.sort(t) end\" 0").await;
    assert!(sort.contains("the simulator stopped it after"), "{sort}");
    assert_eq!(run(&c, "PING").await, "PONG");
    assert_eq!(run(&c, "SET k v").await, "OK");
}

/// The URL's `step=` that stops on a lesson's last metrics step (its
/// figures in the caption): lesson 18 goes on to an exercise after it.
fn last_metrics_step(id: &str) -> String {
    let lesson = locklab_core::lesson::builtin()
        .unwrap()
        .into_iter()
        .find(|l| l.id == id)
        .unwrap();
    let at = lesson.steps.iter().rposition(|s| s.metrics.is_some()).unwrap();
    (at + 1).to_string()
}
