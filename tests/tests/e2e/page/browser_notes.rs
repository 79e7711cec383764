//! Issue 39: presenter mode's notes window, in headless Chromium.
//!
//! The presenter's caption opens a second window (`?notes=1`) that shows
//! the trainer's notes for where the presenter is — the lesson's note, the
//! note of the step just played, the next one to come — and follows every
//! press over a `BroadcastChannel`, in the presenter's language. The notes
//! come from the backend's loopback-only `/api/notes`; the lessons file the
//! page (and a class's followers) load carries none. Screenshots of the
//! notes window at 1280×720 and 1440×900, English and Chinese, land in
//! `tests/out/`.

use std::time::Duration;

use fantoccini::key::Key;
use fantoccini::{Client, Locator};
use locklab_core::lesson::{builtin, notes::length, Lang};
use locklab_tests::browser::{self as harness, browser, js, require_dist, screenshot, text, viewport, Backend};

const WAIT: Duration = Duration::from_secs(60);

async fn text_of(c: &Client, css: &str) -> String {
    harness::eventually(WAIT, &format!("{css} on the page"), || async { text(c, css).await }).await
}

/// Wait until `css`'s text contains `want`.
async fn says(c: &Client, css: &str, want: &str) {
    harness::eventually(WAIT, &format!("{css} saying {want:?}"), || async {
        text(c, css).await.filter(|t| t.contains(want)).map(|_| ())
    })
    .await;
}

async fn click(c: &Client, css: &str) {
    let e = harness::eventually(WAIT, &format!("{css} to click"), || async {
        c.find(Locator::Css(css)).await.ok()
    })
    .await;
    e.click().await.unwrap();
}

/// The first words of a note, as the window shows them (Markdown marks
/// and line breaks aside): enough to know it is this note.
fn opening(note: &str) -> String {
    let first = note.trim().lines().next().unwrap_or_default();
    first.chars().filter(|c| !"*`_".contains(*c)).take(12).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_notes_window_follows_the_presenter_and_the_page_carries_no_notes() {
    let dist = require_dist();
    let backend = Backend::start(&dist, 0);
    let base = format!("http://127.0.0.1:{}", backend.port);
    let all = builtin().unwrap();
    let l05 = all.iter().find(|l| l.id == "05").unwrap();
    let note = l05.notes.clone().expect("every lesson has a note (lint rule 7)");
    assert!(length(&note.en) > 100);

    // What the page loads as lessons has no note in it.
    let lessons_file = std::fs::read_dir(&dist)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name().unwrap().to_string_lossy().starts_with("lessons-")
                && p.extension().is_some_and(|x| x == "json")
        })
        .expect("dist/ has the lessons file");
    let page_lessons = std::fs::read_to_string(&lessons_file).unwrap();
    assert!(
        !page_lessons.contains(&opening(&note.en)),
        "{} carries lesson 05's note",
        lessons_file.display()
    );
    assert!(!page_lessons.contains("\"notes\":{"), "the page's lessons carry notes");

    let (driver, c) = browser().await;
    for lang in [Lang::En, Lang::Zh] {
        let code = lang.code();
        c.goto(&format!("{base}/?lang={code}&lesson=05&step=2&seed=7&present=1"))
            .await
            .unwrap();
        let presenter = c.window().await.unwrap();
        click(&c, "[data-testid=notes-open]").await;
        let notes_window = harness::eventually(WAIT, "the notes window to open", || async {
            let all = c.windows().await.ok()?;
            all.into_iter().find(|w| *w != presenter)
        })
        .await;
        c.switch_to_window(notes_window.clone()).await.unwrap();
        // It asks where the presenter is and gets lesson 05 after 2 steps.
        says(&c, "[data-testid=notes-lesson]", "05").await;
        let step2 = match lang {
            Lang::En => "step 2",
            Lang::Zh => "第 2 步",
        };
        says(&c, "[data-testid=notes-lesson]", step2).await;
        let body = text_of(&c, "[data-testid=notes-body]").await;
        assert!(
            body.contains(&opening(note.get(lang))),
            "{body:?} is not lesson 05's {code} note"
        );
        for (w, h) in [(1280, 720), (1440, 900)] {
            viewport(&c, w, h).await;
            screenshot(&c, &format!("notes-window-{code}-{w}x{h}.png")).await;
        }
        // A press in the presenter moves the notes window with it.
        c.switch_to_window(presenter.clone()).await.unwrap();
        // PageDown, as a clicker sends it (the caption's ◀ ▶ are for the mouse, hidden in presenter mode).
        let body = c.find(Locator::Css("body")).await.unwrap();
        body.send_keys(&char::from(Key::PageDown).to_string()).await.unwrap();
        c.switch_to_window(notes_window).await.unwrap();
        let step3 = match lang {
            Lang::En => "step 3",
            Lang::Zh => "第 3 步",
        };
        says(&c, "[data-testid=notes-lesson]", step3).await;
        // The projected page never shows the notes.
        c.close_window().await.unwrap();
        c.switch_to_window(presenter).await.unwrap();
        let shown = js(&c, "return document.body.innerText").await;
        assert!(
            !shown.as_str().unwrap_or_default().contains(&opening(note.get(lang))),
            "the note is on the projected page"
        );
        viewport(&c, 1280, 720).await;
        screenshot(&c, &format!("notes-presenter-{code}-1280x720.png")).await;
    }
    c.close().await.unwrap();
    drop(driver);
}
