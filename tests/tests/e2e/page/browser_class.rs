//! Class mode end to end, in headless Chromium: one presenter page and two
//! follower pages (one a 390×844 phone), three browsers on the backend's
//! own class route. The followers join (one by typing the code on the
//! start page, one by the join URL), follow three steps, one looks around
//! and follows again, the presenter asks a step's multiple-choice quiz,
//! both answer (one right, one wrong), the presenter's chart shows 2 of 2
//! with that split, the reveal reaches both, and the summary's CSV says
//! the same. The presenter pushes a "break my lock" drill; both followers
//! search it in their own explore worker and the presenter's board shows
//! 2 of 2 searched and who found a counterexample. The phone has no
//! horizontal page scroll and answer buttons at least 44 px tall, one per
//! line. Screenshots land in `tests/out/`.
//!
//! Nothing sleeps for a fixed time: every wait polls for a condition.

use std::future::Future;
use std::time::Duration;

use fantoccini::{Client, Locator};
use locklab_tests::browser::{
    self as harness, attr, browser, free_port, js, require_dist, screenshot, text, viewport, Backend,
};

const WAIT: Duration = Duration::from_secs(40);

async fn eventually<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    harness::eventually(WAIT, what, probe).await
}

async fn attr_becomes(c: &Client, what: &str, css: &str, name: &str, want: &str) {
    eventually(what, || async { (attr(c, css, name).await? == want).then_some(()) }).await;
}

async fn click(c: &Client, css: &str) {
    let e = eventually(&format!("{css} to show"), || async {
        c.find(Locator::Css(css)).await.ok()
    })
    .await;
    e.click().await.unwrap_or_else(|err| panic!("clicking {css}: {err}"));
}

/// Load `url` and wait for the app and its simulator.
async fn open(c: &Client, url: &str) {
    c.goto(url).await.unwrap();
    eventually("the simulator's module", || async {
        let engine = js(c, "return document.documentElement.dataset.engine || null").await;
        (engine.as_str()? == "ready").then_some(())
    })
    .await;
}

/// The step a page stands on, as its counter names it.
async fn step_is(c: &Client, who: &str, want: &str) {
    attr_becomes(
        c,
        &format!("{who} at step {want}"),
        "[data-testid=step-name]",
        "data-step",
        want,
    )
    .await;
}

/// The presenter opens the explorer from its class panel and pushes the
/// first design (it has a counterexample).
async fn push_drill(p: &Client) {
    click(p, "[data-testid=class-drill]").await;
    click(p, "[data-testid=explore-push]:not([disabled])").await;
    eventually("the drill board", || async {
        p.find(Locator::Css("[data-testid=drill-board]")).await.ok()
    })
    .await;
}

/// A follower takes the pushed drill: its explorer (its own worker)
/// searches and finds the counterexample, and the card says so.
async fn take_drill(c: &Client) {
    click(c, "[data-testid=drill-take]").await;
    attr_becomes(
        c,
        "the drill searched",
        "[data-testid=drill-card]",
        "data-state",
        "found",
    )
    .await;
    let r = text(c, "[data-testid=drill-result]").await.unwrap_or_default();
    assert!(r.chars().any(|c| c.is_ascii_digit()), "how many schedules: {r:?}");
}

/// Lesson 01's first multiple-choice quiz from its fourth step on (the
/// step run after three), and its right choice.
fn choice_step() -> (usize, usize) {
    let lessons = locklab_core::lesson::builtin().unwrap();
    let l = lessons.iter().find(|l| l.id == "01").unwrap();
    let i = (3..l.steps.len())
        .find(|&i| l.steps[i].quiz.as_ref().is_some_and(|q| q.choices.len() >= 2))
        .expect("lesson 01 has a multiple-choice quiz from its fourth step on");
    let right = locklab_core::class::right_choice(&l.steps[i], "").expect("a stated answer");
    (i, right)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// long: one class from start to summary, in the order a room lives it
async fn a_class_in_headless_chromium() {
    let dist = require_dist();
    let backend = Backend::start(&dist, free_port());
    let base = format!("http://127.0.0.1:{}", backend.port);
    let (_d1, p) = browser().await;
    let (_d2, f1) = browser().await;
    let (_d3, f2) = browser().await;
    viewport(&p, 1280, 720).await;
    viewport(&f2, 390, 844).await;

    // The presenter starts a class from presenter mode.
    open(&p, &format!("{base}/?lang=en&lesson=01&present=1")).await;
    click(&p, "[data-testid=class-start]").await;
    let code = eventually("the class code", || async {
        let t = text(&p, "[data-testid=class-code]").await?;
        (t.len() == 6 && !t.contains('·')).then_some(t)
    })
    .await;
    let url = text(&p, "[data-testid=class-url]").await.unwrap_or_default();
    assert!(
        url.contains(&format!("class={code}")),
        "the join URL {url:?} carries the code"
    );
    assert!(attr(&p, "[data-testid=class-qr]", "src")
        .await
        .unwrap_or_default()
        .starts_with("data:image/svg+xml"));

    // One follower types the code on the start page; one opens the join URL.
    open(&f1, &format!("{base}/?lang=en")).await;
    let field = |css: &'static str| f1.find(Locator::Css(css));
    field("[data-testid=join-code]")
        .await
        .unwrap()
        .send_keys(&code.to_lowercase())
        .await
        .unwrap();
    field("[data-testid=join-name]")
        .await
        .unwrap()
        .send_keys("<b>Ada</b>")
        .await
        .unwrap();
    click(&f1, "[data-testid=join-submit]").await;
    open(&f2, &format!("{base}/?lang=zh&class={code}")).await;
    attr_becomes(
        &p,
        "two followers joined",
        "[data-testid=class-joined]",
        "data-count",
        "2",
    )
    .await;
    screenshot(&p, "class-presenter-1280x720-en.png").await;

    // Three steps, followed by both (the third after a look around).
    for n in 1..=2 {
        click(&p, "[data-testid=step-forward]").await;
        step_is(&p, "the presenter", &n.to_string()).await;
        step_is(&f1, "follower 1", &n.to_string()).await;
        step_is(&f2, "follower 2", &n.to_string()).await;
    }
    assert_eq!(
        attr(&f2, "[data-testid=app]", "data-lang").await.as_deref(),
        Some("zh"),
        "its own language"
    );

    // Follower 1 looks around; the presenter's move waits for "follow again".
    click(&f1, "[data-testid=step-back]").await;
    step_is(&f1, "follower 1 looking around", "1").await;
    click(&p, "[data-testid=step-forward]").await;
    step_is(&f2, "follower 2", "3").await;
    step_is(&f1, "follower 1 still looking around", "1").await;
    click(&f1, "[data-testid=follow-again]").await;
    step_is(&f1, "follower 1 following again", "3").await;

    // The presenter goes to the multiple-choice step and asks the room.
    let (quiz_step, right) = choice_step();
    for n in 4..=quiz_step {
        click(&p, "[data-testid=step-forward]").await;
        step_is(&p, "the presenter", &n.to_string()).await;
    }
    click(&p, "[data-testid=class-ask]").await;
    let wrong = (right + 1) % 3;
    for (c, choice) in [(&f1, right), (&f2, wrong)] {
        click(c, &format!("[data-testid=answer-choice][data-index='{choice}']")).await;
        eventually("the answer recorded", || async {
            c.find(Locator::Css("[data-testid=answer-sent]")).await.ok()
        })
        .await;
    }
    attr_becomes(&p, "2 of 2 answered", "[data-testid=tally]", "data-answered", "2").await;
    assert_eq!(attr(&p, "[data-testid=tally]", "data-of").await.as_deref(), Some("2"));
    let counts = js(
        &p,
        "return [...document.querySelectorAll('[data-testid=tally-bar]')].map(b => +b.dataset.count)",
    )
    .await;
    let mut want = vec![0u64; counts.as_array().map_or(0, Vec::len)];
    want[right] += 1;
    want[wrong] += 1;
    assert_eq!(counts, serde_json::json!(want), "the split: one right, one wrong");
    // Who answered, named by the server: Ada's markup as text, the other
    // (no nickname) by member id.
    let by = eventually("who answered", || async {
        let t = text(&p, "[data-testid=class-answered-by]").await?;
        (t.split(", ").count() == 2).then_some(t)
    })
    .await;
    assert!(by.starts_with("Answered: ") && by.contains("<b>Ada</b>"), "{by:?}");
    screenshot(&p, "class-presenter-tally-1280x720-en.png").await;

    // Reveal: both see the answer and their verdict.
    click(&p, "[data-testid=class-reveal]").await;
    attr_becomes(
        &f1,
        "follower 1 right",
        "[data-testid=answer-verdict]",
        "data-right",
        "right",
    )
    .await;
    attr_becomes(
        &f2,
        "follower 2 wrong",
        "[data-testid=answer-verdict]",
        "data-right",
        "wrong",
    )
    .await;
    screenshot(&f2, "class-follower-revealed-390x844-zh.png").await;

    // The phone: no sideways page scroll, text and buttons big enough.
    let phone = js(
        &f2,
        "return { over: document.documentElement.scrollWidth - innerWidth, \
           small: [...document.querySelectorAll('.follower, .follower *')].filter(e => e.children.length == 0 && \
              e.textContent.trim() && parseFloat(getComputedStyle(e).fontSize) < 14).length }",
    )
    .await;
    assert!(
        phone["over"].as_i64().is_some_and(|o| o <= 0),
        "no horizontal scroll at 390 px: {phone}"
    );
    assert_eq!(phone["small"].as_i64(), Some(0), "class text at least 14 px: {phone}");

    // A "break my lock" drill: the presenter picks a design in the
    // explorer and pushes it; each follower takes it in its own worker,
    // and the presenter's screen counts who searched and who found a
    // counterexample (names as text). Then the phone follows again.
    push_drill(&p).await;
    for c in [&f1, &f2] {
        take_drill(c).await;
    }
    attr_becomes(&p, "2 of 2 searched", "[data-testid=drill-board]", "data-reported", "2").await;
    assert_eq!(
        attr(&p, "[data-testid=drill-board]", "data-of").await.as_deref(),
        Some("2")
    );
    assert_eq!(
        attr(&p, "[data-testid=drill-board]", "data-found").await.as_deref(),
        Some("2")
    );
    let by = text(&p, "[data-testid=drill-found-by]").await.unwrap_or_default();
    assert!(by.starts_with("Found one: ") && by.contains("<b>Ada</b>"), "{by:?}");
    screenshot(&p, "class-presenter-drill-1280x720-en.png").await;
    viewport(&p, 1440, 900).await;
    screenshot(&p, "class-presenter-drill-1440x900-en.png").await;
    screenshot(&f2, "class-follower-drill-390x844-zh.png").await;
    assert_eq!(
        attr(&f2, "[data-testid=follower]", "data-following").await.as_deref(),
        Some("false")
    );
    click(&f2, "[data-testid=follow-again]").await;
    step_is(&f2, "the phone following again after the drill", &quiz_step.to_string()).await;

    // The end, from the class panel back on the lesson: the summary, with its CSV.
    click(&p, "[data-testid=explore-close]").await;
    click(&p, "[data-testid=class-end]").await;
    for c in [&p, &f1, &f2] {
        eventually("the summary", || async {
            c.find(Locator::Css("[data-testid=class-summary]")).await.ok()
        })
        .await;
    }
    let csv = js(&p, "return decodeURIComponent(document.querySelector('[data-testid=summary-csv]').href.split(',').slice(1).join(','))").await;
    let csv = csv.as_str().unwrap_or_default().to_owned();
    assert!(
        csv.contains(&format!("question,01,{},,2,2,1,50,", quiz_step + 1)),
        "{csv}"
    );
    assert!(csv.contains("<b>Ada</b>"), "the name as text: {csv}");
}

/// The follower page at phone sizes, before and after a question: what
/// the room sees on its phones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_follower_page_fits_a_phone() {
    let dist = require_dist();
    let backend = Backend::start(&dist, free_port());
    let base = format!("http://127.0.0.1:{}", backend.port);
    let (_d1, p) = browser().await;
    let (_d2, f) = browser().await;
    viewport(&p, 1440, 900).await;
    open(&p, &format!("{base}/?lang=zh&lesson=01&present=1")).await;
    click(&p, "[data-testid=class-start]").await;
    let code = eventually("the class code", || async {
        let t = text(&p, "[data-testid=class-code]").await?;
        (t.len() == 6 && !t.contains('·')).then_some(t)
    })
    .await;
    screenshot(&p, "class-presenter-1440x900-zh.png").await;
    let (quiz_step, _) = choice_step();
    for n in 1..=quiz_step {
        click(&p, "[data-testid=step-forward]").await;
        step_is(&p, "the presenter", &n.to_string()).await;
    }
    for (w, h, lang) in [(390, 844, "en"), (360, 640, "zh")] {
        viewport(&f, w, h).await;
        open(&f, &format!("{base}/?lang={lang}&class={code}")).await;
        step_is(&f, "the follower", &quiz_step.to_string()).await;
        if w == 390 {
            click(&p, "[data-testid=class-ask]").await;
        }
        eventually("the question", || async {
            f.find(Locator::Css("[data-testid=answer-choice]")).await.ok()
        })
        .await;
        let m = js(
            &f,
            "return { over: document.documentElement.scrollWidth - innerWidth, \
               low: Math.min(...[...document.querySelectorAll('[data-testid=answer-choice]')].map(b => b.getBoundingClientRect().height)), \
               lefts: new Set([...document.querySelectorAll('[data-testid=answer-choice]')].map(b => Math.round(b.getBoundingClientRect().left))).size, \
               n: document.querySelectorAll('[data-testid=answer-choice]').length }",
        )
        .await;
        assert!(
            m["n"].as_u64().unwrap_or(0) >= 2 && m["lefts"].as_u64() == Some(1),
            "answer buttons one per line at {w}×{h}: {m}"
        );
        assert!(
            m["over"].as_f64().is_some_and(|o| o <= 0.0),
            "no horizontal scroll at {w}×{h}: {m}"
        );
        assert!(
            m["low"].as_f64().unwrap_or(0.0) >= 44.0,
            "answer buttons ≥ 44 px at {w}×{h}: {m}"
        );
        screenshot(&f, &format!("class-follower-question-{w}x{h}-{lang}.png")).await;
    }

    // The drill on a phone in English (a reload rejoins as the same
    // member), and the presenter's board in Chinese.
    viewport(&f, 390, 844).await;
    open(&f, &format!("{base}/?lang=en&class={code}")).await;
    attr_becomes(&p, "the follower back", "[data-testid=class-joined]", "data-count", "1").await;
    push_drill(&p).await;
    take_drill(&f).await;
    attr_becomes(&p, "1 of 1 searched", "[data-testid=drill-board]", "data-reported", "1").await;
    screenshot(&f, "class-follower-drill-390x844-en.png").await;
    screenshot(&p, "class-presenter-drill-1440x900-zh.png").await;
    viewport(&p, 1280, 720).await;
    screenshot(&p, "class-presenter-drill-1280x720-zh.png").await;
}
