use super::*;
use crate::lab::{Client, SimLab};

#[test]
fn violation_bands_explain_themselves_in_the_pages_language() {
    let l = crate::catalog::find("05").unwrap();
    let s = crate::driver::SimDriver::new(l, 7, l.steps.len());
    let (en, zh) = (
        layout(&s.trace(), s.now_ms(), Lang::En),
        layout(&s.trace(), s.now_ms(), Lang::Zh),
    );
    assert!(!en.bands.is_empty());
    for (e, z) in en.bands.iter().zip(&zh.bands) {
        assert!(e.explain.is_ascii() && !e.explain.is_empty(), "{}", e.explain);
        assert!(!z.explain.is_ascii(), "{}", z.explain);
        assert!(
            z.title.contains(&e.explain),
            "the tooltip keeps core's sentence: {}",
            z.title
        );
    }
}

/// Lesson `id` laid out at its end.
fn at_end(id: &str, lang: Lang) -> Layout {
    let l = crate::catalog::find(id).unwrap();
    let s = crate::driver::SimDriver::new(l, 7, l.steps.len());
    layout(&s.trace(), s.now_ms(), lang)
}

#[test]
fn four_lock_services_fit_one_lane_per_group() {
    let l = at_end("45", Lang::En);
    let lanes: Vec<(&str, Option<&str>)> = (l.lanes.iter())
        .map(|l| (l.label.as_str(), l.role.as_deref()))
        .collect();
    assert_eq!(
        lanes,
        [
            ("client A", None),
            ("client B", None),
            ("redis", None),
            ("r1–3", None),
            ("etcd1–3", Some("etcd1 leads · term 1")),
            ("zk1–3", Some("zk1 leads · epoch 1")),
            ("resource", None),
        ]
    );
    let redlock: Vec<&str> = (l.bars.iter())
        .filter(|b| !b.belief && b.key == "redlock:order:1001")
        .map(|b| b.owner_name.as_str())
        .collect();
    assert_eq!(redlock, ["A", "B"], "one bar per owner for the three masters' copies");
    let headings: Vec<&str> = l.bands.iter().map(|b| b.heading.as_str()).collect();
    assert_eq!(
        headings,
        ["two holders of 4 locks (A, B)", "stale write accepted (A, B)"],
        "the four services' overlaps share one band"
    );
    let zh = at_end("45", Lang::Zh);
    assert_eq!(zh.bands[0].heading, "4 把锁各有两个持有者（A、B）");
    assert_eq!(zh.lanes[4].role.as_deref(), Some("etcd1 领导 · 任期 1"));
}

#[test]
fn an_election_moves_the_leader_marker() {
    let l = at_end("43", Lang::En);
    let roles: Vec<(&str, Option<&str>)> = (l.lanes.iter())
        .filter(|l| matches!(l.kind, LaneKind::Node(_)))
        .map(|l| (l.label.as_str(), l.role.as_deref()))
        .collect();
    assert_eq!(
        roles,
        [
            ("etcd1", Some("down")),
            ("etcd2", Some("leader · term 2")),
            ("etcd3", None)
        ]
    );
    assert!(
        l.marks
            .iter()
            .any(|m| m.label.as_deref() == Some("etcd2 elected · term 2")),
        "the election is marked where it happened"
    );
    let zk = at_end("44", Lang::Zh);
    let roles: Vec<Option<&str>> = zk.lanes[2..5].iter().map(|l| l.role.as_deref()).collect();
    assert_eq!(
        roles,
        [None, Some("领导者 · 纪元 2"), None],
        "zk1, cut off, leads no more; zk2 leads epoch 2"
    );
}

#[test]
fn node_lanes_group_only_past_six_nodes() {
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let five = node_groups(&names(&["r1", "r2", "r3", "r4", "r5"]));
    assert_eq!(five.len(), 5);
    let ten = node_groups(&names(&[
        "redis", "r1", "r2", "r3", "etcd1", "etcd2", "etcd3", "zk1", "zk2", "zk3",
    ]));
    let labels: Vec<&str> = ten.iter().map(|g| g.2.as_str()).collect();
    assert_eq!(labels, ["redis", "r1–3", "etcd1–3", "zk1–3"]);
    assert_eq!(ten[2].0, 4);
    assert_eq!(ten[2].1, [4, 5, 6]);
}

#[test]
fn ten_thousand_events_stay_within_a_bounded_dom() {
    let mut lab = SimLab::new();
    for i in 0..3_400 {
        lab.run(Client::from_index(i % 3), &format!("SET k{i} v"));
    }
    let trace = lab.trace();
    assert!(trace.events.len() >= 3_400);
    let mut big = trace.clone();
    while big.events.len() < 10_000 {
        let mut more = trace.events.clone();
        let n = big.events.len() as u64;
        for e in &mut more {
            e.step += n;
        }
        big.events.extend(more);
    }
    let l = layout(&big, 0, Lang::En);
    assert!(
        l.marks.len() <= 3 * 900,
        "{} marks for {} events",
        l.marks.len(),
        big.events.len()
    );
    assert!(l.merged > 5_000);
    let z = layout_zoomed(&big, 0, Lang::En, 4.0);
    assert!(
        z.width > l.width * 3.0 && z.marks.len() > l.marks.len(),
        "{} {}",
        z.marks.len(),
        l.marks.len()
    );
}

#[test]
fn seconds_read_naturally() {
    assert_eq!(seconds(0), "0 s");
    assert_eq!(seconds(30_000), "30 s");
    assert_eq!(seconds(1_500), "1.5 s");
    assert_eq!(seconds(250), "0.25 s");
}

#[test]
fn the_axis_is_linear_between_breaks_and_spreads_bursts() {
    let st = Style::NORMAL;
    let axis = Axis::fit(&[0, 0, 0, 10_000, 31_000], 31_000, 150.0, 800.0, st);
    let ticks = axis.ticks();
    assert!(ticks.len() >= 4, "{ticks:?}");
    let gaps: Vec<f64> = ticks
        .windows(2)
        .map(|w| (axis.x(w[1]) - axis.x(w[0])) / (w[1] - w[0]) as f64)
        .collect();
    // The burst at 0 sits before the first tick after it; every pair
    // of ticks after that is equally far apart per millisecond.
    for g in &gaps[1..] {
        assert!((g - axis.k).abs() < 1e-9, "{gaps:?} k = {}", axis.k);
    }
    let e = &axis.event_x;
    assert!(e[0] < e[1] && e[1] < e[2] && e[2] < axis.x_after(0), "{e:?}");
    assert!(
        e[1] - e[0] >= 20.0,
        "a burst's events get a slot each on one lane: {e:?}"
    );
    assert!(axis.x_after(0) < axis.x(5_000) && axis.x(5_000) < e[3]);
    // On different lanes, a burst's events share columns.
    let lanes = Axis::fit_lanes(&[(0, 0), (1, 1000), (2, 0)], 10_000, 150.0, 800.0, st);
    assert_eq!(lanes.event_x[0], lanes.event_x[1]);
    assert!(lanes.event_x[2] > lanes.event_x[1]);
    assert!((axis.x_end() - 950.0).abs() < 1e-6);
    assert!(
        axis.x(31_000) <= axis.x_end() && axis.x(31_000) > axis.x_end() - 40.0,
        "fitted, not padded"
    );
    assert_eq!(axis.breaks(Lang::En).len(), 1);
    // Fitted to the events: 2 s of events fill the plot, no padding to 30 s.
    let short = Axis::fit(&[0, 500, 2_000], 2_000, 150.0, 800.0, st);
    assert!(short.end_ms <= 2_200, "{}", short.end_ms);
    // 20 ms of events: a millisecond axis, no burst needed.
    let ms = Axis::fit(&[0, 2, 5, 9, 20], 20, 150.0, 800.0, st);
    assert!(
        ms.breaks(Lang::En).is_empty() && ms.end_ms < 30,
        "{:?}",
        ms.breaks(Lang::En)
    );
}

#[test]
fn long_idle_gaps_are_squeezed_with_their_length_written() {
    let axis = Axis::fit(&[100_000, 101_000, 700_000], 700_000, 150.0, 800.0, Style::NORMAL);
    assert_eq!(
        axis.start_ms, 100_000,
        "the idle time before the first event is not on the axis"
    );
    let b = axis.breaks(Lang::En);
    let gap = b.iter().find(|b| b.kind == "gap").expect("a squeezed gap");
    assert_eq!(gap.label.as_deref(), Some("599 s"));
    assert!(gap.x1 - gap.x0 < 100.0);
    assert!(
        axis.x(101_000) - axis.x(100_000) > 100.0,
        "the busy second keeps its width"
    );
}

/// Every pair of labels (mark, bar, callout) on one line is apart.
fn assert_no_overlap(l: &Layout, what: &str) {
    let mut all: Vec<&Label> = l.labels.iter().collect();
    all.extend(l.callouts.iter().map(|c| &c.label));
    for (i, a) in all.iter().enumerate() {
        assert!(
            a.x >= 0.0 && a.x + a.w <= l.width + 0.5,
            "{what}: {a:?} outside 0..{}",
            l.width
        );
        for b in &all[i + 1..] {
            let same_line = (a.y - b.y).abs() < l.style.font;
            let apart = a.x + a.w <= b.x || b.x + b.w <= a.x;
            assert!(!same_line || apart, "{what}: {a:?} overlaps {b:?}");
        }
    }
}

/// Lesson 18's five clients each send every request to five masters:
/// a burst is labelled once with its count, and a release by its key.
#[test]
fn a_request_to_every_master_is_labelled_once_with_its_count() {
    let l = crate::catalog::find("18").unwrap();
    let s = crate::driver::SimDriver::new(l, 7, l.steps.len());
    for (w, st) in [
        (990.0, Style::NORMAL),
        (1150.0, Style::NORMAL),
        (1240.0, Style::PRESENT),
    ] {
        let lay = layout_in(&s.trace(), s.now_ms(), Lang::En, w, 1.0, st);
        let marks: Vec<&Label> = lay.labels.iter().filter(|l| l.class == "mark-label").collect();
        let texts: Vec<&str> = marks.iter().map(|l| l.text.as_str()).collect();
        assert!(texts.contains(&"SET lock:order:1001 ×5"), "at {w} px: {texts:?}");
        assert!(texts.contains(&"EVAL lock:order:1002 ×5"), "at {w} px: {texts:?}");
        for (i, a) in marks.iter().enumerate() {
            for b in &marks[i + 1..] {
                // A lane's two label rows are one row apart.
                let one_lane = (a.y - b.y).abs() <= st.label_row() + 0.5;
                assert!(
                    !one_lane || a.text != b.text || (a.x - b.x).abs() >= st.font,
                    "at {w} px, the same words twice, one above the other: {a:?} {b:?}"
                );
            }
        }
    }
}

/// Keys share a bar row only when they are never held there at once:
/// in no lesson do two keys' bars on one row overlap (an open bar to
/// its deadline), on a node or a client. Lesson 18's masters take three
/// keys one after the other, and its clients believe in two, on one
/// row each.
#[test]
fn keys_share_a_bar_row_only_one_after_the_other() {
    for l in crate::catalog::all() {
        let s = crate::driver::SimDriver::new(l, 7, l.steps.len());
        let lay = layout_in(&s.trace(), s.now_ms(), Lang::En, 1150.0, 1.0, Style::NORMAL);
        let mut rows: HashMap<(usize, i64), Vec<&Bar>> = HashMap::new();
        for b in &lay.bars {
            rows.entry((b.lane, b.y.round() as i64)).or_default().push(b);
        }
        for bars in rows.values() {
            for (i, a) in bars.iter().enumerate() {
                for b in bars[i + 1..].iter().filter(|b| b.key != a.key) {
                    let end = |b: &Bar| b.deadline_x.map_or(b.x1, |d| d.max(b.x1));
                    assert!(
                        end(a) <= b.x0 + 0.5 || end(b) <= a.x0 + 0.5,
                        "lesson {}: {a:?} and {b:?} share a row and overlap",
                        l.id
                    );
                }
            }
        }
        if l.id == "18" {
            // Each master holds 1001, 1002, 1003 in turn; A believes it
            // holds 1001, then 1003.
            for (i, lane) in lay.lanes.iter().enumerate() {
                let n = rows.keys().filter(|(l, _)| *l == i).count();
                assert!(n <= 1, "lesson 18, {}: {n} bar rows for keys held in turn", lane.label);
            }
        }
    }
}

/// A race's arrows are a texture drawn faint; a story's stay lines, and
/// zooming into a race thins its arrows back into lines.
#[test]
fn only_races_are_dense() {
    let dense = |id: &str, zoom: f64| {
        let l = crate::catalog::find(id).unwrap();
        let s = crate::driver::SimDriver::new(l, 7, l.steps.len());
        layout_in(&s.trace(), s.now_ms(), Lang::En, 1150.0, zoom, Style::NORMAL).dense
    };
    for id in ["18", "25", "26", "27"] {
        assert!(dense(id, 1.0), "lesson {id}");
    }
    for id in ["01", "05", "15", "17", "19", "37", "45"] {
        assert!(!dense(id, 1.0), "lesson {id}");
    }
    assert!(!dense("18", 8.0), "zoomed in, a race's arrows are lines again");
}

#[test]
fn lessons_lay_out_without_overlapping_labels_and_with_titled_bands() {
    let compact = Style {
        compact: true,
        ..Style::sized(13.0)
    };
    for id in ["02", "05", "13", "15", "16", "17", "18", "22", "25", "33", "36", "45"] {
        let l = crate::catalog::find(id).unwrap();
        let s = crate::driver::SimDriver::new(l, 7, l.steps.len());
        for (w, st) in [
            (990.0, Style::NORMAL),
            (1150.0, Style::NORMAL),
            (1240.0, Style::PRESENT),
            (1240.0, compact),
        ] {
            for lang in [Lang::En, Lang::Zh] {
                let lay = layout_in(&s.trace(), s.now_ms(), lang, w, 1.0, st);
                assert_no_overlap(&lay, &format!("lesson {id} at {w} px, {lang:?}"));
                // No tick's label runs past the SVG, where the panel
                // would cut it ("0.02 s" at the end of lesson 15's).
                for t in &lay.ticks {
                    assert!(
                        t.x + text_w(&t.label, st.font) / 2.0 <= lay.width,
                        "lesson {id} at {w} px: tick {} at {} of {}",
                        t.label,
                        t.x,
                        lay.width
                    );
                }
                for b in &lay.bands {
                    assert!(
                        lay.callouts
                            .iter()
                            .any(|c| c.kind == "violation" && c.label.text.contains(&b.heading)),
                        "lesson {id}: band {} has its title drawn",
                        b.heading
                    );
                }
                // A legend for what was drawn, and none when nothing was.
                assert_eq!(lay.legend.is_empty(), lay.marks.is_empty(), "lesson {id}");
            }
        }
    }
}

/// Presenter mode's last resort gives lesson 45 (two clients holding
/// four locks each) the room a 720 px projector lacks: at 13 px its
/// lanes take a fifth less height, and its two bands keep their titles.
#[test]
fn compact_rows_take_back_a_fifth_of_lesson_45s_height() {
    let l = crate::catalog::find("45").unwrap();
    let s = crate::driver::SimDriver::new(l, 7, l.steps.len());
    let at = |st| layout_in(&s.trace(), s.now_ms(), Lang::En, 1240.0, 1.0, st);
    let (roomy, tight) = (
        at(Style::sized(13.0)),
        at(Style {
            compact: true,
            ..Style::sized(13.0)
        }),
    );
    let h = |l: &Layout| l.lanes_bottom;
    assert!(
        h(&tight) <= h(&roomy) * 0.8,
        "compact {} vs {} px",
        h(&tight),
        h(&roomy)
    );
    let titles = tight.callouts.iter().filter(|c| c.kind == "violation").count();
    assert_eq!(titles, tight.bands.len());
}

#[test]
fn callouts_say_what_happened_in_the_pages_language() {
    let l = crate::catalog::find("05").unwrap();
    let s = crate::driver::SimDriver::new(l, 7, l.steps.len());
    let en = layout_in(&s.trace(), s.now_ms(), Lang::En, 1150.0, 1.0, Style::NORMAL);
    let texts: Vec<&str> = en.callouts.iter().map(|c| c.label.text.as_str()).collect();
    assert!(
        texts.iter().any(|t| t.contains("removed") && t.contains("'s lock")),
        "{texts:?}"
    );
    // B and C holding together: a titled band now (lesson 05 records the
    // overlap as a violation), or the callout where there is room.
    assert!(
        texts
            .iter()
            .any(|t| t.contains("B and C both hold") || t.contains("two holders (B, C)")),
        "{texts:?}"
    );
    let zh = layout_in(&s.trace(), s.now_ms(), Lang::Zh, 1150.0, 1.0, Style::NORMAL);
    assert!(
        zh.callouts.iter().all(|c| !c.label.text.contains("expired")),
        "{:?}",
        zh.callouts
    );
    assert!(
        zh.legend.iter().all(|i| i.text.chars().any(|c| c >= '\u{4e00}')),
        "{:?}",
        zh.legend
    );
}

#[test]
fn a_lab_trace_becomes_lanes_bars_and_marks() {
    let mut lab = SimLab::new();
    lab.run(Client::A, "SET lock:order:1 token-A-111 NX PX 30000");
    lab.run(Client::B, "SET lock:order:1 token-B-222 NX PX 30000");
    lab.advance(31_000);
    lab.run(Client::B, "SET lock:order:1 token-B-222 NX PX 30000");
    let l = layout(lab.trace(), lab.now_ms(), Lang::En);
    let labels: Vec<&str> = l.lanes.iter().map(|l| l.label.as_str()).collect();
    assert_eq!(labels, ["client A", "client B", "client C", "redis"]);
    assert_eq!(l.bars.len(), 2);
    let (a, b) = (&l.bars[0], &l.bars[1]);
    assert_eq!(
        (a.owner, a.end, b.owner, b.end),
        (Some(0), Some(BarEnd::Expired), Some(1), None)
    );
    assert!(a.x1 <= b.x0 && b.x1 >= b.x0 && a.lane == 3 && b.lane == 3);
    assert!(b.deadline_x.unwrap() > b.x1);
    let tones: Vec<_> = l
        .marks
        .iter()
        .filter_map(|m| match m.kind {
            MarkKind::Command(t) => Some((m.lane, t)),
            _ => None,
        })
        .collect();
    assert_eq!(tones, [(0, Tone::Ok), (1, Tone::Nil), (1, Tone::Ok)]);
    assert!(l.marks.iter().any(|m| m.kind
        == MarkKind::Expired {
            key: "lock:order:1".into()
        }
        && m.lane == 3));
    assert!(l.bands.is_empty());
    let short = |line: &str| {
        let argv: Vec<String> = locklab_core::cli::parse(line)
            .unwrap()
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        super::short(&[argv])
    };
    assert_eq!(short("set lock:order:1 token-A-111 NX PX 30000"), "SET lock:order:1");
    assert_eq!(short("get a-very-long-key-name-indeed"), "GET a-very-long-key-n…");
    let release = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end";
    assert_eq!(
        short(&format!("EVAL \"{release}\" 1 lock:order:1 tok")),
        "EVAL lock:order:1"
    );
    assert_eq!(short("evalsha 0123abcd 1 lock tok"), "EVALSHA lock");
    assert_eq!(short("FCALL release 1 lock tok"), "FCALL lock");
    assert_eq!(short("EVAL \"return 1\" 0"), "EVAL", "no key: the name alone");
    assert_eq!(short("EVAL \"return 1\" x"), "EVAL", "a bad key count: the name alone");
    // What a free-play console may type: a key count past usize, or
    // past the arguments, and a key too long for a label.
    assert_eq!(short("EVAL \"return 1\" 99999999999999999999999"), "EVAL");
    assert_eq!(short("EVAL \"return 1\" 3"), "EVAL");
    assert_eq!(
        short(&format!("EVAL s 1 {}", "k".repeat(100_000))),
        format!("EVAL {}…", "k".repeat(16))
    );
    assert_eq!(short("PING"), "PING");
}
