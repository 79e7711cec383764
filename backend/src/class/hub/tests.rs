use super::*;
use locklab_core::lesson::builtin;

const LAN: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 168, 1, 20));
const LOOP: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

fn hub() -> Hub {
    let mut n = 0u64;
    let entropy: Entropy = Box::new(move || {
        n += 1;
        n.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    });
    Hub::new(ClassConfig::default(), Arc::new(builtin().unwrap()), entropy)
}

/// A multiple-choice quiz with its own answer: (lesson, step, right, choices).
fn quiz() -> (String, usize, usize, usize) {
    let all = builtin().unwrap();
    for l in &all {
        for (i, s) in l.steps.iter().enumerate() {
            if let Some(q) = s.quiz.as_ref().filter(|q| q.choices.len() >= 2 && q.answer.is_some()) {
                let right = right_choice(s, "").unwrap();
                return (l.id.clone(), i, right, q.choices.len());
            }
        }
    }
    panic!("no multiple-choice quiz in the catalogue")
}

fn to(out: &[Out], conn: SocketId) -> Vec<ServerSays> {
    out.iter()
        .filter_map(|o| match o {
            Out::To(c, m) if *c == conn => Some(m.clone()),
            Out::Many(cs, m) if cs.contains(&conn) => Some(m.clone()),
            _ => None,
        })
        .collect()
}

fn send(h: &mut Hub, conn: SocketId, msg: serde_json::Value, now: Instant) -> Vec<Out> {
    h.handle_text(conn, &msg.to_string(), now)
}

/// A class with its presenter: (presenter conn, code, secret).
fn class(h: &mut Hub, now: Instant) -> (SocketId, String, String) {
    let p = h.connect(LOOP);
    let out = send(h, p, serde_json::json!({"type":"start"}), now);
    match &to(&out, p)[..] {
        [ServerSays::Started {
            code,
            secret,
            join_url,
            qr_svg,
        }] => {
            assert!(join_url.ends_with(&format!("?class={code}")), "{join_url}");
            assert!(qr_svg.contains("<svg"));
            assert_eq!(secret.len(), 32);
            (p, code.to_string(), secret.clone())
        }
        other => panic!("{other:?}"),
    }
}

fn join(h: &mut Hub, code: &str, name: &str, now: Instant) -> (SocketId, String) {
    let f = h.connect(LAN);
    let out = send(h, f, serde_json::json!({"type":"join","code":code,"name":name}), now);
    let member = to(&out, f)
        .into_iter()
        .find_map(|m| match m {
            ServerSays::Joined { member, .. } => Some(member),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{out:?}"));
    (f, member)
}

fn errors(out: &[Out], conn: SocketId) -> Vec<String> {
    to(out, conn)
        .into_iter()
        .filter_map(|m| match m {
            ServerSays::Error { message } => Some(message),
            _ => None,
        })
        .collect()
}

#[test]
fn a_class_is_started_from_loopback_only() {
    let mut h = hub();
    let now = Instant::now();
    let lan = h.connect(LAN);
    let out = send(&mut h, lan, serde_json::json!({"type":"start"}), now);
    assert_eq!(errors(&out, lan), vec![ClassError::LoopbackOnly.to_string()]);
    let mapped = h.connect("::ffff:127.0.0.1".parse().unwrap());
    let out = send(&mut h, mapped, serde_json::json!({"type":"start"}), now);
    assert!(matches!(&to(&out, mapped)[..], [ServerSays::Started { .. }]), "{out:?}");
    assert_eq!(h.classes(), 1);
}

#[test]
fn controls_need_the_presenters_connection_and_secret() {
    let mut h = hub();
    let now = Instant::now();
    let (p, code, secret) = class(&mut h, now);
    let (f, _) = join(&mut h, &code, "eve", now);
    let (g, _) = join(&mut h, &code, "bob", now);
    let mv = serde_json::json!({"do":"move","position":{"lesson":"05","step":3}});
    for bad in [secret.as_str(), "", "0".repeat(32).as_str()] {
        let out = send(
            &mut h,
            f,
            serde_json::json!({"type":"control","secret":bad,"control":mv}),
            now,
        );
        assert_eq!(
            out,
            vec![Out::To(f, error(ClassError::NotPresenter))],
            "a follower, secret {bad:?}"
        );
    }
    let out = send(
        &mut h,
        p,
        serde_json::json!({"type":"control","secret":"nope","control":mv}),
        now,
    );
    assert_eq!(out, vec![Out::To(p, error(ClassError::NotPresenter))]);
    let out = send(
        &mut h,
        p,
        serde_json::json!({"type":"control","secret":secret,"control":mv}),
        now,
    );
    let moved = to(&out, g);
    assert!(
        matches!(&moved[..], [ServerSays::Moved { position, .. }] if position.step == 3),
        "{out:?}"
    );
    assert_eq!(to(&out, f), moved);
    assert!(to(&out, p).is_empty(), "the presenter is not sent its own move");
}

#[test]
fn the_first_answer_counts_and_the_presenter_gets_coalesced_tallies() {
    let mut h = hub();
    let t0 = Instant::now();
    let (p, code, secret) = class(&mut h, t0);
    let (lesson, step, right, choices) = quiz();
    let wrong = (right + 1) % choices;
    let fs: Vec<_> = (0..3).map(|i| join(&mut h, &code, &format!("f{i}"), t0)).collect();
    let ask = serde_json::json!({"do":"ask","lesson":lesson,"step":step,"reply":""});
    let out = send(
        &mut h,
        p,
        serde_json::json!({"type":"control","secret":secret,"control":ask}),
        t0,
    );
    let qid = match &to(&out, fs[0].0)[..] {
        [ServerSays::Asked { question, .. }] => question.id,
        other => panic!("{other:?}"),
    };
    let answer = |c: usize| serde_json::json!({"type":"answer","question":qid,"answer":{"choice":c}});
    let t1 = t0 + Duration::from_secs(1);
    let out = send(&mut h, fs[0].0, answer(right), t1);
    let unrevealed = ServerSays::Answered {
        question: qid,
        right: None,
        score: 0,
    };
    assert!(
        to(&out, fs[0].0).contains(&unrevealed),
        "no verdict or score before the reveal"
    );
    assert!(matches!(&to(&out, p)[..], [ServerSays::Tally { tally, .. }] if tally.answered == 1 && tally.of == 3));
    // Within the same tenth of a second: no tally, until the tick after it.
    let out = send(&mut h, fs[1].0, answer(wrong), t1);
    assert!(to(&out, p).is_empty(), "{out:?}");
    // A second answer does not count and keeps the first's verdict.
    let out = send(&mut h, fs[0].0, answer(wrong), t1);
    assert!(to(&out, fs[0].0).contains(&unrevealed));
    let out = send(&mut h, fs[2].0, answer(99), t1);
    assert_eq!(errors(&out, fs[2].0), vec![ClassError::NoSuchChoice.to_string()]);
    let out = h.tick(t1 + FLUSH_EVERY);
    let tally = match &to(&out, p)[..] {
        [ServerSays::Tally { tally, .. }] => tally.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!((tally.answered, tally.right, tally.of), (2, 1, 3));
    assert_eq!((tally.counts[right], tally.counts[wrong]), (1, 1));
    let reveal = serde_json::json!({"do":"reveal","question":qid});
    let out = send(
        &mut h,
        p,
        serde_json::json!({"type":"control","secret":secret,"control":reveal}),
        t1,
    );
    for conn in [p, fs[2].0] {
        assert!(
            matches!(&to(&out, conn)[..], [ServerSays::Revealed { right_choice: Some(r), tally, .. }] if *r == right && tally.answered == 2),
            "{out:?}"
        );
    }
    let verdict = |right, score| ServerSays::Answered {
        question: qid,
        right: Some(right),
        score,
    };
    assert!(to(&out, fs[0].0).contains(&verdict(true, 1)), "{out:?}");
    assert!(to(&out, fs[1].0).contains(&verdict(false, 0)), "{out:?}");
    let again = send(
        &mut h,
        p,
        serde_json::json!({"type":"control","secret":secret,"control":reveal}),
        t1,
    );
    assert!(
        to(&again, fs[0].0).contains(&verdict(true, 1)),
        "a second reveal counts nothing twice"
    );
    let out = send(&mut h, fs[2].0, answer(right), t1);
    assert_eq!(errors(&out, fs[2].0), vec![ClassError::NoOpenQuestion.to_string()]);
}

#[test]
fn wrong_codes_are_throttled_per_peer() {
    let mut h = hub();
    let now = Instant::now();
    let (_, code, _) = class(&mut h, now);
    let f = h.connect("10.9.8.7".parse().unwrap());
    for i in 0..20 {
        let out = send(&mut h, f, serde_json::json!({"type":"join","code":"ZZZZZZ"}), now);
        assert!(errors(&out, f)[0].starts_with("no class has code"), "{i}: {out:?}");
    }
    // Even the right code, now, from that peer; another peer is not held.
    let out = send(&mut h, f, serde_json::json!({"type":"join","code":code}), now);
    assert_eq!(errors(&out, f), vec![ClassError::Throttled(60).to_string()]);
    join(&mut h, &code, "other", now);
    let out = send(
        &mut h,
        f,
        serde_json::json!({"type":"join","code":code}),
        now + THROTTLE_WINDOW,
    );
    assert!(errors(&out, f).is_empty(), "a minute later: {out:?}");
}

#[test]
fn frames_are_capped_and_malformed_ones_answered() {
    let mut h = hub();
    let now = Instant::now();
    let (p, code, secret) = class(&mut h, now);
    let (f, _) = join(&mut h, &code, "x", now);
    let big = format!(
        r#"{{"type":"answer","question":1,"answer":{{"text":"{}"}}}}"#,
        "a".repeat(5000)
    );
    let out = h.handle_text(f, &big, now);
    assert!(errors(&out, f)[0].starts_with("message too large"), "{out:?}");
    let out = h.handle_text(f, "{not json", now);
    assert!(errors(&out, f)[0].starts_with("bad message"), "{out:?}");
    // A presenter's batch of live events may be larger than a follower's frame.
    let live = serde_json::json!({"type":"control","secret":secret,"control":{"do":"live","events":[]}});
    let padded = format!("{live}{}", " ".repeat(10_000));
    let out = h.handle_text(p, &padded, now);
    assert!(matches!(&to(&out, f)[..], [ServerSays::Live { .. }]), "{out:?}");
}

#[test]
fn names_are_cleaned_text_and_a_rejoin_replays_what_was_missed() {
    let mut h = hub();
    let now = Instant::now();
    let (p, code, secret) = class(&mut h, now);
    let f = h.connect(LAN);
    let name = "  <img src=x>\u{202e}\n<b>";
    let out = send(
        &mut h,
        f,
        serde_json::json!({"type":"join","code":code,"name":name}),
        now,
    );
    let roster = to(&out, p);
    assert!(
        matches!(&roster[..], [ServerSays::Roster { members }] if members[0].name.as_deref() == Some("<img src=x> <b>")),
        "{roster:?}"
    );
    let member = match &to(&out, f)[..] {
        [ServerSays::Joined { member, name, .. }] if name.as_deref() == Some("<img src=x> <b>") => member.clone(),
        other => panic!("{other:?}"),
    };
    let mv = |step: usize| serde_json::json!({"type":"control","secret":secret,"control":{"do":"move","position":{"lesson":"05","step":step}}});
    send(&mut h, p, mv(1), now);
    h.disconnect(f, now);
    send(&mut h, p, mv(2), now);
    send(&mut h, p, mv(3), now);
    let f2 = h.connect(LAN);
    let out = send(
        &mut h,
        f2,
        serde_json::json!({"type":"join","code":code,"member":member,"since":"1"}),
        now,
    );
    let got = to(&out, f2);
    assert!(
        matches!(&got[..], [ServerSays::Moved { id: a, .. }, ServerSays::Moved { id: b, .. }, ServerSays::Joined { member: m, position, since, .. }]
            if a == "2" && b == "3" && *m == member && position.step == 3 && since == "3"),
        "{got:?}"
    );
}

#[test]
fn end_and_idleness_end_a_class() {
    let mut h = hub();
    let now = Instant::now();
    let (p, code, secret) = class(&mut h, now);
    let (f, _) = join(&mut h, &code, "a", now);
    let out = send(
        &mut h,
        p,
        serde_json::json!({"type":"control","secret":secret,"control":{"do":"end"}}),
        now,
    );
    assert!(matches!(&to(&out, f)[..], [ServerSays::Ended { summary }] if summary.members.len() == 1));
    assert!(out.contains(&Out::Close(f)));
    assert_eq!(h.classes(), 0);

    let (p, _, _) = class(&mut h, now);
    h.disconnect(p, now);
    assert!(h.tick(now + h.config().idle - Duration::from_secs(1)).is_empty());
    assert_eq!(h.classes(), 1);
    h.tick(now + h.config().idle);
    assert_eq!(h.classes(), 0, "a class without its presenter for the idle time ends");
}

#[test]
fn a_full_class_refuses_new_followers() {
    let mut h = hub();
    h.cfg.max_followers = 2;
    let now = Instant::now();
    let (_, code, _) = class(&mut h, now);
    join(&mut h, &code, "a", now);
    join(&mut h, &code, "b", now);
    let f = h.connect(LAN);
    let out = send(&mut h, f, serde_json::json!({"type":"join","code":code}), now);
    assert_eq!(errors(&out, f), vec![ClassError::Full(2).to_string()]);
}

/// Instances of one class, on one log (as the Redis store shares it).
struct Cluster {
    hubs: Vec<Hub>,
    log: Vec<(ClassCode, LogEntry)>,
    /// How far each hub has applied the log.
    applied: Vec<usize>,
}

impl Cluster {
    fn new(n: usize) -> Cluster {
        let hubs = (0..n)
            .map(|i| {
                // Each instance draws its own numbers.
                let mut x = 1000 * (i as u64 + 1);
                let entropy: Entropy = Box::new(move || {
                    x += 1;
                    x.wrapping_mul(0x9e37_79b9_7f4a_7c15)
                });
                let mut h = Hub::new(ClassConfig::default(), Arc::new(builtin().unwrap()), entropy);
                h.set_instance(format!("i{i}"));
                h
            })
            .collect();
        Cluster {
            hubs,
            log: Vec::new(),
            applied: vec![0; n],
        }
    }

    /// A frame from `conn` of hub `i`: what it answers at once (`None`
    /// when the frame was logged instead).
    fn send(&mut self, i: usize, conn: SocketId, msg: serde_json::Value, now: Instant) -> Option<Vec<Out>> {
        match self.hubs[i].admit_text(conn, &msg.to_string(), now) {
            Admit::Done(out) => Some(out),
            Admit::Log { code, entry, .. } => {
                self.log.push((code, entry));
                None
            }
        }
    }

    /// Every hub applies the log's new entries: what each says.
    fn sync(&mut self, now: Instant) -> Vec<Vec<Out>> {
        let mut outs = vec![Vec::new(); self.hubs.len()];
        for (i, h) in self.hubs.iter_mut().enumerate() {
            for (code, e) in &self.log[self.applied[i]..] {
                outs[i].extend(h.apply(code, e.clone(), now).0);
            }
            self.applied[i] = self.log.len();
        }
        outs
    }
}

#[test]
// long: one story across three instances (join on both, a refused control, a repeated answer, a restart that replays the log), asserted as it goes
fn instances_on_one_log_hold_one_class_and_a_new_one_replays_it() {
    let mut c = Cluster::new(2);
    let t0 = Instant::now();
    let p = c.hubs[0].connect(LOOP);
    assert!(c.send(0, p, serde_json::json!({"type":"start"}), t0).is_none());
    let outs = c.sync(t0);
    let (code, secret) = match &to(&outs[0], p)[..] {
        [ServerSays::Started { code, secret, .. }] => (code.clone(), secret.clone()),
        other => panic!("{other:?}"),
    };
    // A follower on the other instance, which learnt the class from the log.
    let f = c.hubs[1].connect(LAN);
    assert!(c
        .send(1, f, serde_json::json!({"type":"join","code":code,"name":"bea"}), t0)
        .is_none());
    let outs = c.sync(t0);
    assert!(matches!(&to(&outs[1], f)[..], [ServerSays::Joined { .. }]), "{outs:?}");
    // The presenter's move and question reach it there.
    let (lesson, step, right, _) = quiz();
    let ask = serde_json::json!({"do":"ask","lesson":lesson,"step":step,"reply":""});
    assert!(c
        .send(
            0,
            p,
            serde_json::json!({"type":"control","secret":secret,"control":ask}),
            t0
        )
        .is_none());
    let outs = c.sync(t0);
    let qid = match &to(&outs[1], f)[..] {
        [ServerSays::Asked { question, .. }] => question.id,
        other => panic!("{other:?}"),
    };
    // Its answer is logged once; a second is answered where it was sent.
    let answer = serde_json::json!({"type":"answer","question":qid,"answer":{"choice":right}});
    assert!(c.send(1, f, answer.clone(), t0).is_none());
    let t1 = t0 + FLUSH_EVERY;
    let outs = c.sync(t1);
    let tally = to(&outs[0], p).into_iter().find_map(|m| match m {
        ServerSays::Tally { tally, .. } => Some(tally),
        _ => None,
    });
    assert_eq!(tally.map(|t| (t.answered, t.right, t.of)), Some((1, 1, 1)), "{outs:?}");
    let again = c.send(1, f, answer, t1).expect("a repeat is not logged");
    assert!(matches!(&to(&again, f)[..], [ServerSays::Answered { right: None, .. }]));
    // A follower's control is refused where it was sent, and never logged.
    let mv = serde_json::json!({"do":"move","position":{"step":9}});
    let refused = c.send(
        1,
        f,
        serde_json::json!({"type":"control","secret":secret,"control":mv}),
        t1,
    );
    assert_eq!(refused, Some(vec![Out::To(f, error(ClassError::NotPresenter))]));
    assert_eq!(c.log.len(), 4, "start, join, ask, one answer");
    // The log holds the secret's hash, never the secret.
    let text = serde_json::to_string(&c.log.iter().map(|(_, e)| e).collect::<Vec<_>>()).unwrap();
    assert!(!text.contains(&secret) && text.contains(&super::super::secret_hash(&secret)));

    // A third instance (a restart) replays the log and the presenter
    // resumes there: the answer is still counted.
    c.hubs.push(Cluster::new(3).hubs.remove(2));
    c.applied.push(0);
    let p2 = c.hubs[2].connect(LOOP);
    let resume = serde_json::json!({"type":"resume","code":code,"secret":secret});
    assert!(c.send(2, p2, resume, t1).is_none(), "the class is not known there yet");
    let outs = c.sync(t1);
    let said = to(&outs[2], p2);
    assert!(
        matches!(said.first(), Some(ServerSays::Started { secret: s, .. }) if *s == secret),
        "{said:?}"
    );
    let tally = said.iter().find_map(|m| match m {
        ServerSays::Tally { tally, .. } => Some((tally.answered, tally.right)),
        _ => None,
    });
    assert_eq!(tally, Some((1, 1)));
    // The old presenter connection is closed where it lives.
    assert!(outs[0].contains(&Out::Close(p)), "{:?}", outs[0]);
    // A wrong secret on an instance that knows the class: refused there.
    let eve = c.hubs[1].connect(LOOP);
    let wrong = serde_json::json!({"type":"resume","code":code,"secret":"0".repeat(32)});
    assert_eq!(
        c.send(1, eve, wrong, t1),
        Some(vec![Out::To(eve, error(ClassError::NotPresenter))])
    );
}

#[test]
fn a_follower_that_leaves_is_logged_and_every_instance_sees_it() {
    let mut c = Cluster::new(2);
    let t0 = Instant::now();
    let p = c.hubs[0].connect(LOOP);
    c.send(0, p, serde_json::json!({"type":"start"}), t0);
    let outs = c.sync(t0);
    let code = match &to(&outs[0], p)[..] {
        [ServerSays::Started { code, .. }] => code.clone(),
        other => panic!("{other:?}"),
    };
    let f = c.hubs[1].connect(LAN);
    c.send(1, f, serde_json::json!({"type":"join","code":code}), t0);
    c.sync(t0);
    assert_eq!(c.hubs[0].classes[&code].connected(), 1);
    let (left_code, left) = c.hubs[1].leave(f, t0).expect("logged: it is in a class");
    assert_eq!((left_code, &left.what), (code.clone(), &What::Left));
    c.log.push((code.clone(), left));
    c.sync(t0 + FLUSH_EVERY);
    assert_eq!(c.hubs[0].classes[&code].connected(), 0);
    assert_eq!(c.hubs[1].classes[&code].connected(), 0);
    assert!(c.hubs[0].ghosts.is_empty(), "its ghost is gone");
    // A connection that never logged anything is forgotten at once.
    let idle = c.hubs[1].connect(LAN);
    assert!(c.hubs[1].leave(idle, t0).is_err());
}

#[test]
fn the_connections_of_a_dead_instance_leave_through_the_log() {
    let mut c = Cluster::new(2);
    let t0 = Instant::now();
    let p = c.hubs[0].connect(LOOP);
    c.send(0, p, serde_json::json!({"type":"start"}), t0);
    let outs = c.sync(t0);
    let code = match &to(&outs[0], p)[..] {
        [ServerSays::Started { code, .. }] => code.clone(),
        other => panic!("{other:?}"),
    };
    // Two followers on instance 1, which then dies without a word.
    for name in ["ann", "al"] {
        let f = c.hubs[1].connect(LAN);
        c.send(1, f, serde_json::json!({"type":"join","code":code,"name":name}), t0);
    }
    c.sync(t0);
    assert_eq!(c.hubs[0].ghost_instances(), vec!["i1".to_owned()]);
    assert_eq!(c.hubs[0].classes[&code].connected(), 2, "ghosts look present");
    // Instance 0 sees its heartbeat expire and logs their leaving for it.
    let left = c.hubs[0].departures("i1");
    assert_eq!(left.len(), 2);
    assert!(left
        .iter()
        .all(|(k, e)| *k == code && e.instance == "i1" && e.what == What::Left));
    c.log.extend(left.clone());
    // Logged twice (two instances noticed): the repeat changes nothing.
    c.log.extend(left);
    let t1 = t0 + FLUSH_EVERY;
    let outs = c.sync(t1);
    assert_eq!(c.hubs[0].classes[&code].connected(), 0);
    assert!(c.hubs[0].ghost_instances().is_empty());
    // The roster is coalesced: the last one after the next tick.
    let mut said = to(&outs[0], p);
    said.extend(to(&c.hubs[0].tick(t1 + FLUSH_EVERY), p));
    let roster = said.into_iter().rev().find_map(|m| match m {
        ServerSays::Roster { members } => Some(members),
        _ => None,
    });
    assert!(
        roster.is_some_and(|r| r.len() == 2 && r.iter().all(|m| !m.connected)),
        "{outs:?}"
    );
    // Instance 1 was not dead after all: its sockets close (their pages
    // come back), so none outlives its member.
    assert_eq!(c.hubs[1].classes[&code].connected(), 0);
    assert_eq!(outs[1].iter().filter(|o| matches!(o, Out::Close(_))).count(), 2);
}

#[test]
fn the_presenter_is_told_its_question_and_who_answered() {
    let mut h = hub();
    let t0 = Instant::now();
    let (p, code, secret) = class(&mut h, t0);
    let (lesson, step, right, _) = quiz();
    let (ann, _) = join(&mut h, &code, "ann", t0);
    let (bo_conn, bo) = join(&mut h, &code, "", t0);
    let (_, _) = join(&mut h, &code, "cy", t0);
    let ask = serde_json::json!({"do":"ask","lesson":lesson,"step":step,"reply":""});
    let out = send(
        &mut h,
        p,
        serde_json::json!({"type":"control","secret":secret,"control":ask}),
        t0,
    );
    // Its question, numbered by the server, as the followers get it.
    let said: Vec<_> = to(&out, p)
        .into_iter()
        .filter(|m| !matches!(m, ServerSays::Roster { .. }))
        .collect();
    let qid = match &said[..] {
        [ServerSays::Asked { question, .. }, ServerSays::Tally { tally, names }] => {
            assert_eq!((tally.question, tally.answered), (question.id, 0));
            assert!(names.is_empty());
            question.id
        }
        other => panic!("{other:?}"),
    };
    let answer = serde_json::json!({"type":"answer","question":qid,"answer":{"choice":right}});
    let t1 = t0 + FLUSH_EVERY;
    send(&mut h, ann, answer.clone(), t1);
    send(&mut h, bo_conn, answer, t1);
    let out = h.tick(t1 + FLUSH_EVERY);
    // Who answered, as the roster shows them (a follower without a
    // nickname by its member id); cy has not answered.
    let mut want = vec!["ann".to_owned(), bo.clone()];
    match &to(&out, p)[..] {
        [ServerSays::Tally { tally, names }] => {
            assert_eq!(tally.answered, 2);
            let mut got = names.clone();
            got.sort();
            want.sort();
            assert_eq!(got, want);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_silent_presenter_still_connected_ends_its_class_after_the_idle_time() {
    let mut h = hub();
    let t0 = Instant::now();
    let (p, _, secret) = class(&mut h, t0);
    let idle = h.config().idle;
    // A control resets the clock.
    let t1 = t0 + idle / 2;
    let mv = serde_json::json!({"do":"move","position":{"step":1}});
    send(
        &mut h,
        p,
        serde_json::json!({"type":"control","secret":secret,"control":mv}),
        t1,
    );
    h.tick(t0 + idle);
    assert_eq!(h.classes(), 1, "it spoke half an idle time ago");
    let out = h.tick(t1 + idle);
    assert_eq!(
        h.classes(),
        0,
        "a connected presenter silent for the idle time ends its class"
    );
    assert!(matches!(&to(&out, p)[..], [ServerSays::Ended { .. }]), "{out:?}");
}

/// The live instances' URLs (from the store's heartbeat) reach every page
/// in a class when they change, and each page that joins or starts after;
/// an unchanged list is not sent again, and one instance sends nothing.
#[test]
fn pages_are_told_the_live_instances() {
    let mut h = hub();
    let now = Instant::now();
    let (p, code, _) = class(&mut h, now);
    let (f, _) = join(&mut h, &code, "ann", now);
    let idle = h.connect(LAN);
    assert!(
        h.set_instance_urls(Vec::new()).is_empty(),
        "one instance: nothing to say"
    );
    let urls = vec!["http://10.0.0.2:8080/".to_owned(), "http://10.0.0.1:8080/".to_owned()];
    let out = h.set_instance_urls(urls.clone());
    let mut sorted = urls.clone();
    sorted.sort();
    let told = ServerSays::Instances { urls: sorted.clone() };
    assert_eq!(to(&out, p), vec![told.clone()]);
    assert_eq!(to(&out, f), vec![told.clone()]);
    assert!(to(&out, idle).is_empty(), "a connection in no class is told nothing");
    assert!(h.set_instance_urls(urls).is_empty(), "the same list again");
    let g = h.connect(LAN);
    let out = send(
        &mut h,
        g,
        serde_json::json!({"type":"join","code":code,"name":"bo"}),
        now,
    );
    let got = to(&out, g);
    assert!(
        matches!(&got[..], [ServerSays::Joined { .. }, m] if *m == told),
        "{got:?}"
    );
}
