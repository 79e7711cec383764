//! The lesson lint over the whole catalogue (issue 38): no quiz answer is
//! on the screen before it is asked, the answer is not given away by being
//! the longest or the shortest option or by its slot, and zh and en choices
//! say the same (the rules are in `core/src/lesson/lint.rs`).

use locklab_core::lesson::lint::{find, is_literal, lint, needles, normalize, says_the_same, Finding};
use locklab_core::lesson::{builtin, Lang, Lesson};

#[test]
fn the_catalogue_passes_the_lesson_lint() {
    // The catalogue as the lab ships it: every file of `lessons/`, embedded at build time.
    let lessons = builtin().expect("all lesson files are valid");
    let report = lint(&lessons);
    println!("{report}");
    assert!(report.passes(), "the lesson lint failed:\n{report}");
}

/// A one-step lesson around a quiz: `narration`, an earlier step's
/// explanation `said`, then the asking step (`cmd`, `expect`, `quiz`).
fn lesson(narration: &str, said: &str, cmd: &str, expect: &str, quiz: &str) -> Lesson {
    let said = if said.is_empty() { "A reads the key." } else { said };
    let text = format!(
        r#"
id = "99"
theme = "basics"
title = {{ zh = "题", en = "t" }}
narration = {{ zh = "叙", en = """{narration}""" }}
source = {{ seed = "A", file = "x.txt", section = "1" }}
notes = {{ zh = "注", en = "note" }}
actors = ["A"]
[[steps]]
client = "A"
cmd = "GET k"
explain = {{ zh = "解", en = """{said}""" }}
[[steps]]
client = "A"
cmd = '''{cmd}'''
expect = '''{expect}'''
quiz = {quiz}
[outcome]
invariant = "none"
broken = false
explain = {{ zh = "解", en = "e" }}
"#
    );
    Lesson::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn on_screen(l: &Lesson) -> Vec<String> {
    let r = lint(std::slice::from_ref(l));
    (r.findings.iter())
        .filter(|f| matches!(f, Finding::OnScreen { lang: Lang::En, .. }))
        .map(|f| f.to_string())
        .collect()
}

/// The issue's examples, as the lessons said them before the rewrite: each
/// is caught, and the same quiz after a neutral narration is not.
#[test]
fn the_issues_examples_are_caught() {
    let reply_q = r#"{ zh = "返回？", en = "What is the reply?" }"#;
    let cases = [
        // 06, 16: a reply stated in words.
        ("The token does not match, the script answers 0, B's lock is untouched.", "", "GET k", "(integer) 0", reply_q.to_owned()),
        ("Article B's remedy.", "With a healthy replica WAIT answers 1 and the lock really is on the replica.", "WAIT 1 5000", "(integer) 1", reply_q.to_owned()),
        // 10: a bulk string reply, unquoted.
        ("B acquires, and A's GETDEL answers \"token-B-222\" — A learns it", "", "GETDEL k", "\"token-B-222\"", reply_q.to_owned()),
        // 28: the nil reply.
        ("if anyone changed the stock between WATCH and EXEC, EXEC answers (nil) and nothing runs", "", "EXEC", "(nil)", reply_q.to_owned()),
        // 17: "0 of 5" is the choice "0/5", in a later step's explanation.
        ("This lesson walks through: 5 of 5; 0 of 5 while someone else holds it.", "B tries while A holds it.", "GET k", "OK",
         r#"{ zh = "几个？", en = "How many?", choices = ["0/5", "2/5", "3/5", "5/5"], answer = "0/5" }"#.to_owned()),
        // 13: a part of a prose answer no other choice has.
        ("`tryLock(5, 30, SECONDS)` passes a 30 s leaseTime, so no watchdog starts and the lock simply expires", "", "GET k", "OK",
         r#"{ zh = "怎样？", en = "What happens?", choices = [{ zh = "续期", en = "the watchdog renews every 10 s and the lock stays" }, { zh = "到期", en = "no watchdog: the lock expires at 30 s and someone else can take it" }], answer = { zh = "到期", en = "no watchdog: the lock expires at 30 s and someone else can take it" } }"#.to_owned()),
        // 27: one of the three reference values.
        ("reference values for lock health: acquire success rate > 99.9 %, mean wait < 50 ms, fewer than 3 retries", "", "GET k", "OK",
         r#"{ zh = "哪三条？", en = "Which three?", choices = [{ zh = "甲", en = "success > 99.9 %, wait < 50 ms, retries < 3" }, { zh = "乙", en = "success > 99 %, wait < 500 ms, retries < 10" }], answer = { zh = "甲", en = "success > 99.9 %, wait < 50 ms, retries < 3" } }"#.to_owned()),
        // 45: "all four".
        ("One process, A, takes the same order's lock through all four services", "", "GET k", "OK",
         r#"{ zh = "哪些？", en = "Which services hand the lock to B?", choices = [{ zh = "一", en = "only the single Redis" }, { zh = "二", en = "single Redis and Redlock" }, { zh = "四", en = "all four" }], answer = { zh = "四", en = "all four" } }"#.to_owned()),
    ];
    for (narration, said, cmd, expect, quiz) in cases {
        let caught = on_screen(&lesson(narration, said, cmd, expect, &quiz));
        assert_eq!(caught.len(), 1, "not caught: {narration:?} for {expect:?} / {quiz}");
        let neutral = on_screen(&lesson(
            "A takes the lock; then something happens.",
            "",
            cmd,
            expect,
            &quiz,
        ));
        assert!(neutral.is_empty(), "{neutral:?}");
    }
}

/// Lesson 17's lists before the rewrite: "拿到" does not carry "(3 ≥ N/2+1)".
#[test]
fn zh_and_en_choices_must_say_the_same() {
    let quiz = r#"{ zh = "拿到了吗？", en = "Does C hold the lock?", choices = [{ zh = "拿到", en = "yes (3 ≥ N/2+1)" }, { zh = "没拿到", en = "no (3 < 5)" }], answer = { zh = "拿到", en = "yes (3 ≥ N/2+1)" } }"#;
    let r = lint(&[lesson("n", "", "GET k", "OK", quiz)]);
    let mismatches = r
        .findings
        .iter()
        .filter(|f| matches!(f, Finding::Mismatch { .. }))
        .count();
    assert_eq!(mismatches, 2, "{r}");
    let fixed = r#"{ zh = "拿到了吗？", en = "Does C hold the lock?", choices = [{ zh = "拿到了（3 ≥ N/2+1）", en = "yes (3 ≥ N/2+1)" }, { zh = "没拿到（3 < 5）", en = "no (3 < 5)" }], answer = { zh = "拿到了（3 ≥ N/2+1）", en = "yes (3 ≥ N/2+1)" } }"#;
    let r = lint(&[lesson("n", "", "GET k", "OK", fixed)]);
    assert!(r.findings.is_empty(), "{r}");
    let twice = r#"{ zh = "？", en = "?", choices = ["OK", "(nil)", { zh = "ok", en = "ok " }], answer = "OK" }"#;
    let r = lint(&[lesson("n", "", "GET k", "OK", twice)]);
    assert!(r.findings.iter().any(|f| matches!(f, Finding::Duplicate { .. })), "{r}");
}

/// The catalogue-wide shares: a catalogue whose prose answers are all the
/// longest option, always in the first slot, fails.
#[test]
fn the_longest_option_and_the_slot_are_counted() {
    let quiz = r#"{ zh = "哪个？", en = "Which?", choices = [{ zh = "一个很长很长的正确答案", en = "a long and detailed right answer" }, { zh = "短", en = "short" }, { zh = "也短", en = "brief" }], answer = { zh = "一个很长很长的正确答案", en = "a long and detailed right answer" } }"#;
    let r = lint(&[lesson("n", "", "GET k", "OK", quiz)]);
    assert_eq!((r.longest[0].count, r.longest[0].total), (1, 1));
    assert_eq!((r.longest[1].count, r.longest[1].total), (1, 1));
    assert_eq!((r.shortest[0].count, r.shortest[1].count), (0, 0));
    assert_eq!((r.first_slot.count, r.last_slot.count), (1, 0));
    assert!(!r.passes() && r.failed_shares().len() == 4, "{r}");
    // Padding the distractors past the answer gives it away as surely.
    let padded = quiz
        .replace("\"短\"", "\"一个更长更长更长的错误答案\"")
        .replace("\"也短\"", "\"另一个更长更长的错误答案\"");
    let padded = padded.replace("\"short\"", "\"a much longer and detailed wrong answer\"");
    let padded = padded.replace("\"brief\"", "\"another long and detailed wrong answer\"");
    let r = lint(&[lesson("n", "", "GET k", "OK", &padded)]);
    assert_eq!(
        (r.shortest[0].count, r.shortest[1].count, r.longest[1].count),
        (1, 1, 0),
        "{r}"
    );
}

// The rules' pieces, on the texts that made them.
#[test]
fn replies_count_after_a_reply_word_only() {
    let t = normalize("The token does not match, the script answers 0, B's lock is untouched.");
    assert!(find(&t, "0").is_some());
    assert!(find(&normalize("TTL = 30 s, step 0 of the run"), "0").is_none());
    assert!(find(&normalize("WAIT 等满 5 秒返回 0——"), "0").is_some());
    assert!(find(&normalize("it answers 10."), "1").is_none());
    assert!(find(&normalize("it answers -1."), "1").is_none());
    assert!(find(&normalize("EXEC answers (nil) and"), "(nil)").is_some());
}

#[test]
fn needles_are_whole_words_and_parts_no_other_choice_has() {
    assert!(find("5/5; 10/5", "0/5").is_none());
    assert!(find("5/5; 0/5 while", "0/5").is_some());
    assert_eq!(
        normalize("walks through: 3 of 5 with two down"),
        "walks through: 3/5 with two down"
    );
    let n = needles(
        "no watchdog: the lock expires at 30 s and someone else can take it",
        &[normalize("the watchdog renews every 10 s and the lock stays")],
    );
    assert!(n.contains(&"no watchdog".to_owned()), "{n:?}");
    let n = needles("(integer) 1, still A's", &[normalize("(integer) -1")]);
    assert!(
        n.contains(&"1".to_owned()) && n.contains(&"still a's".to_owned()),
        "{n:?}"
    );
    let n = needles("1) \"lock/order/1001/1b59\"\n2) (integer) 2", &[]);
    assert!(
        n.contains(&"lock/order/1001/1b59".to_owned()) && n.contains(&"2".to_owned()),
        "{n:?}"
    );
    assert_eq!(
        normalize("没有看门狗，锁在\n第 30 s 到期"),
        "没有看门狗,锁在第 30 s 到期"
    );
}

#[test]
fn literals_and_agreeing_translations() {
    for lit in [
        "0/5",
        "(integer) -2",
        "about 30000",
        "约 3000",
        "≈ 14 ms",
        "25 000",
        "5–50 ms",
        "12 s",
        "False",
    ] {
        assert!(is_literal(lit), "{lit}");
    }
    for prose in ["none", "all four", "2 votes, fails", "8 s, like Redisson"] {
        assert!(!is_literal(prose), "{prose}");
    }
    assert!(!says_the_same("yes (3 ≥ N/2+1)", "拿到"));
    assert!(!says_the_same("a positive number up to 10", "1 到 10 之间的正数"));
    assert!(says_the_same(
        "Redlock (5 independent masters)",
        "Redlock（5 个独立 master）"
    ));
    assert!(says_the_same("yes, 3 of 5 is a majority", "能，3/5 是多数"));
}

/// Issue 39: a wait, a fault or a belief of its own with no caption shows
/// the room nothing when presenter mode steps to it; a belief folded into
/// the command that causes it, or any step with an `explain`, is not silent.
#[test]
fn a_silent_step_is_caught() {
    let lesson = |steps: &str| {
        let text = format!(
            r#"
id = "99"
theme = "basics"
title = {{ zh = "题", en = "t" }}
narration = {{ zh = "叙", en = "n" }}
source = {{ seed = "A", file = "x.txt", section = "1" }}
notes = {{ zh = "注", en = "note" }}
actors = ["A"]
{steps}
[outcome]
invariant = "none"
broken = false
explain = {{ zh = "解", en = "e" }}
"#
        );
        Lesson::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
    };
    let silent = |l: &Lesson| -> Vec<String> {
        (lint(std::slice::from_ref(l)).findings.iter())
            .filter(|f| matches!(f, Finding::Silent { .. }))
            .map(|f| f.to_string())
            .collect()
    };
    let bare = lesson(
        r#"
[[steps]]
client = "A"
cmd = "SET k v NX PX 1000"
[[steps]]
client = "A"
hold = "k"
[[steps]]
wait_ms = 2000
[[steps]]
fault = { type = "pause_client", client = "A", ms = 10 }
[[steps]]
client = "A"
unhold = "k"
"#,
    );
    let found = silent(&bare);
    assert_eq!(found.len(), 4, "{found:?}");
    assert!(
        found[0].contains("step 2: a hold step") && found[1].contains("step 3: a wait step"),
        "{found:?}"
    );
    assert!(
        found[2].contains("step 4: a fault step") && found[3].contains("step 5: an unhold step"),
        "{found:?}"
    );
    let captioned = lesson(
        r#"
[[steps]]
client = "A"
cmd = "SET k v NX PX 1000"
hold = "k"
[[steps]]
wait_ms = 2000
explain = { zh = "等 2 s：锁过期。", en = "2 s: the lock expires." }
[[steps]]
fault = { type = "pause_client", client = "A", ms = 10 }
explain = { zh = "A 停顿。", en = "A pauses." }
[[steps]]
client = "A"
cmd = "GET k"
unhold = "k"
"#,
    );
    assert!(silent(&captioned).is_empty(), "{:?}", silent(&captioned));
}

/// Rules 6 and 7 (issue 39): a narration longer than a hook, in either
/// language, and a lesson with no trainer's note are each named.
#[test]
fn a_long_narration_and_a_missing_note_are_found() {
    let ok = lesson(
        "A short hook.",
        "",
        "GET k",
        "OK",
        r#"{ zh = "？", en = "What is the reply?" }"#,
    );
    assert!(lint(std::slice::from_ref(&ok)).findings.is_empty());
    let long_en = "word ".repeat(200);
    let long = lesson(
        &long_en,
        "",
        "GET k",
        "OK",
        r#"{ zh = "？", en = "What is the reply?" }"#,
    );
    let found: Vec<String> = (lint(std::slice::from_ref(&long)).findings.iter())
        .filter(|f| matches!(f, Finding::LongNarration { .. }))
        .map(|f| f.to_string())
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("[en]") && found[0].contains("999 characters"),
        "{found:?}"
    );
    let mut bare = ok.clone();
    bare.notes = None;
    let r = lint(std::slice::from_ref(&bare));
    assert!(r.findings.iter().any(|f| matches!(f, Finding::NoNotes { .. })), "{r}");
}

/// What the page (and a class's followers) load as lessons carries no
/// trainer's note: notes leave the lab's machine only through the
/// loopback-only `/api/notes` (issue 39).
#[test]
fn the_pages_lessons_carry_no_notes() {
    let lessons = builtin().unwrap();
    let with_notes = lessons.iter().filter(|l| l.notes().is_some()).count();
    assert_eq!(with_notes, lessons.len(), "every lesson has notes (rule 7)");
    let json = locklab_core::lesson::to_json(&lessons);
    assert!(!json.contains("\"notes\":{"), "the page's lessons carry notes");
    for l in &lessons {
        let en = l.notes.as_ref().unwrap().en.trim();
        let opening: String = en.chars().take(40).collect();
        assert!(
            !json.contains(&opening),
            "lesson {}'s note is in the page's lessons",
            l.id
        );
    }
}
