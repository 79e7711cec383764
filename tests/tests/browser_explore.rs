//! Issue 19: the explore screen in headless Chromium.
//!
//! The page opens "break my lock", the explorer runs in its Web Worker
//! (a second wasm module), and for each classic design the page's result
//! line equals what `locklab explore FILE` prints for the same file and
//! seed; a long search can be cancelled (the worker stops counting); a
//! user's script that does not compile shows redis-server's error; the
//! counterexample plays as a lesson on the timeline. Screenshots at
//! 1280×720 and 1440×900 land in `tests/out/`, and every label of the
//! screen is at least 13 px.
//!
//! The harness (chromedriver, polling with a deadline, screenshots) is the
//! one `browser.rs` uses: `locklab_tests::browser`.

use std::future::Future;
use std::time::Duration;

use fantoccini::{Client, Locator};
use locklab_tests::browser::{self as harness, browser, js, require_dist, root, screenshot, text, viewport, Backend};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(90);

/// [`harness::eventually`] with this suite's deadline.
async fn eventually<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    harness::eventually(WAIT, what, probe).await
}

/// `locklab explore FILE`'s result line, from the CLI's own code.
fn cli_result(file: &str) -> String {
    let args = locklab_backend::cli::explore::ExploreArgs {
        file: Some(root().join("explore/designs").join(file)),
        ..Default::default()
    };
    let out = locklab_backend::cli::explore::run(&args).expect("the CLI explores");
    out.lines().last().unwrap_or_default().to_owned()
}

async fn attr(c: &Client, css: &str, name: &str) -> Option<String> {
    c.find(Locator::Css(css)).await.ok()?.attr(name).await.ok()?
}

async fn status(c: &Client) -> String {
    attr(c, "[data-testid=explore]", "data-status")
        .await
        .unwrap_or_default()
}

async fn wait_status(c: &Client, want: &[&str]) -> String {
    eventually(&format!("the explore screen to be {want:?}"), || async {
        let s = status(c).await;
        want.contains(&s.as_str()).then_some(s)
    })
    .await
}

async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css)).await.unwrap().click().await.unwrap();
}

async fn select_design(c: &Client, index: usize) {
    let js_select = format!(
        "const s = document.querySelector('[data-testid=explore-design]'); s.value = '{index}'; \
         s.dispatchEvent(new Event('change', {{ bubbles: true }})); return s.value;"
    );
    js(c, &js_select).await;
}

/// The smallest computed font size of the screen's visible texts.
const FONT_PROBE: &str = r#"
const els = [...document.querySelectorAll('[data-testid=explore] *')]
  .filter(e => e.getBoundingClientRect().width > 0 && [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()));
return Math.min(...els.map(e => parseFloat(getComputedStyle(e).fontSize)));
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn break_my_lock_in_headless_chromium() {
    let dist = require_dist();
    assert!(
        dist.join("explore-worker_bg.wasm").is_file(),
        "dist has the explore worker"
    );
    let backend = Backend::start(&dist, 0);
    let (driver, c) = browser().await;
    let base = format!("http://127.0.0.1:{}/", backend.port);
    c.goto(&base).await.unwrap();
    eventually("the app", || async {
        c.find(Locator::Css("[data-testid=explore-open]")).await.ok()
    })
    .await;
    // The first load does not fetch the worker.
    let fetched = js(&c, "return performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('explore-worker')).length").await;
    assert_eq!(fetched, json!(0), "the worker is loaded only when the screen opens");
    click(&c, "[data-testid=explore-open]").await;
    wait_status(&c, &["idle"]).await;
    let designs = js(
        &c,
        "return document.querySelectorAll('[data-testid=explore-design] option').length",
    )
    .await;
    assert!(designs.as_u64().unwrap_or(0) >= 10, "{designs}");

    // The six classic designs: the page's verdict is the CLI's, line for line.
    let files = [
        "01-bare-del.toml",
        "02-get-then-del.toml",
        "03-setnx-then-expire.toml",
        "04-no-fencing.toml",
        "05-replicated-failover.toml",
        "06-fenced-single.toml",
    ];
    for (i, file) in files.iter().enumerate() {
        select_design(&c, i).await;
        click(&c, "[data-testid=explore-run]").await;
        wait_status(&c, &["done"]).await;
        let line = text(&c, "[data-testid=explore-resultline]").await.unwrap_or_default();
        assert_eq!(line, cli_result(file), "{file}");
        let result = attr(&c, "[data-testid=explore-result]", "data-result")
            .await
            .unwrap_or_default();
        assert_eq!(result, if i == 5 { "held" } else { "violated" }, "{file}");
        if i == 0 {
            viewport(&c, 1280, 720).await;
            screenshot(&c, "explore-violated-1280x720.png").await;
            let min = js(&c, FONT_PROBE).await.as_f64().unwrap_or(0.0);
            assert!(min >= 13.0, "smallest label {min} px");
        }
        if i == 5 {
            let verdict = text(&c, "[data-testid=explore-verdict]").await.unwrap_or_default();
            assert!(
                verdict.starts_with("held for ") && verdict.contains("A bound, not a proof."),
                "{verdict}"
            );
            viewport(&c, 1440, 900).await;
            screenshot(&c, "explore-held-1440x900.png").await;
            let min = js(&c, FONT_PROBE).await.as_f64().unwrap_or(0.0);
            assert!(min >= 13.0, "smallest label {min} px");
        }
    }

    // Cancel: Redlock's search is long; stop it and watch the count stand still.
    select_design(&c, 6).await;
    click(&c, "[data-testid=explore-run]").await;
    eventually("the search to make progress", || async {
        let n: u64 = attr(&c, "[data-testid=explore-progress]", "data-explored")
            .await?
            .parse()
            .ok()?;
        (n > 0).then_some(())
    })
    .await;
    click(&c, "[data-testid=explore-cancel]").await;
    wait_status(&c, &["cancelled"]).await;
    let at = attr(&c, "[data-testid=explore-progress]", "data-explored").await;
    let total = js(
        &c,
        "return document.querySelector('[data-testid=explore-progress] progress').max",
    )
    .await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        attr(&c, "[data-testid=explore-progress]", "data-explored").await,
        at,
        "the worker stopped"
    );
    assert_ne!(at.as_deref(), total.as_str(), "cancelled before the end");

    // Bring your own lock: a script that does not compile, as Redis says it.
    js(
        &c,
        "const t = document.querySelector('[data-testid=explore-editor]'); \
         t.value = \"[scripts]\\nrelease = 'return redis.call(\\\"DEL\\\", KEYS[1]'\\n\"; \
         t.dispatchEvent(new InputEvent('input', { bubbles: true })); return 1;",
    )
    .await;
    click(&c, "[data-testid=explore-run]").await;
    wait_status(&c, &["error"]).await;
    let err = text(&c, "[data-testid=explore-error]").await.unwrap_or_default();
    assert_eq!(
        err,
        "the release script does not compile: (error) ERR Error compiling script (new function): user_script:1: ')' expected near '<eof>'"
    );

    // The counterexample on the timeline.
    select_design(&c, 0).await;
    click(&c, "[data-testid=explore-run]").await;
    wait_status(&c, &["done"]).await;
    click(&c, "[data-testid=explore-play]").await;
    eventually("the counterexample lesson", || async {
        let h = text(&c, ".lesson-heading").await?;
        h.contains("Counterexample").then_some(())
    })
    .await;
    viewport(&c, 1280, 720).await;
    screenshot(&c, "explore-lesson-1280x720.png").await;

    c.close().await.unwrap();
    drop(driver);
}
