use super::*;

fn reduce(s: State, a: Action) -> State {
    Rc::new(s).reduce(a).as_ref().clone()
}

#[test]
fn url_in_url_out() {
    let q = Query::parse("?lang=zh&lesson=05&step=end&seed=7&driver=sim");
    let s = State::from_query(&q, Lang::En);
    assert_eq!(s.query(), q);
    let s = State::from_query(&Query::parse("?lesson=99"), Lang::Zh);
    assert_eq!(s.query().to_search(), "?lang=zh&seed=1&driver=sim");
}

/// Interview mode is in the URL with its shuffle seed: a link opens the
/// same attempt; turning it on, or starting the lesson over, is a new
/// attempt with a new seed.
#[test]
fn an_interview_link_keeps_its_shuffle_and_a_new_attempt_reseeds() {
    let q = Query::parse("?lang=en&lesson=35&seed=1&driver=sim&quiz=4821");
    let s = State::from_query(&q, Lang::En);
    assert!(s.quiz);
    assert_eq!((s.quiz_seed, s.query()), (4821, q));
    let s = reduce(s, Action::Transport(Transport::Forward));
    assert_eq!(s.quiz_seed, 4821, "stepping is the same attempt");
    let s = reduce(s, Action::Transport(Transport::Home));
    let again = s.quiz_seed;
    assert_ne!(again, 4821, "starting over reseeds");
    assert!(s.query().to_search().ends_with(&format!("quiz={again}")));
    let s = reduce(s, Action::ToggleQuiz);
    assert!(!s.quiz && !s.query().to_search().contains("quiz="));
    let s = reduce(s, Action::ToggleQuiz);
    assert!(s.quiz && s.quiz_seed != again && (1..1_000_000).contains(&s.quiz_seed));
}

#[test]
fn actions_change_what_they_say() {
    let s = State::from_query(&Query::default(), Lang::En);
    let s = reduce(s, Action::SetLang(Lang::Zh));
    assert_eq!(s.lang, Lang::Zh);
    let s = reduce(
        s,
        Action::Run {
            tab: 1,
            line: "SET lock t NX PX 1000".into(),
        },
    );
    assert_eq!((s.active, s.rev), (1, 1));
    assert_eq!(s.lab.borrow().transcript(Client::B)[0].output, "OK");
    let before = s.clone();
    let s = reduce(s, Action::Advance(1000));
    assert!(s != before);
    assert_eq!(s.lab.borrow().now_ms(), 1000);
    let s = reduce(s, Action::SelectLesson("07".into()));
    let s = reduce(s, Action::SelectLesson("nope".into()));
    assert_eq!(s.lesson_id().as_deref(), Some("07"));
    let s = reduce(s, Action::Transport(Transport::Forward));
    assert_eq!(s.step().as_deref(), Some("1"));
    let s = reduce(s, Action::Transport(Transport::End));
    assert_eq!(s.step().as_deref(), Some("end"));
    let s = reduce(s, Action::Transport(Transport::Seek(2)));
    assert_eq!(s.step().as_deref(), Some("2"));
    let s = reduce(s, Action::Transport(Transport::Back));
    assert_eq!(s.step().as_deref(), Some("1"));
    let s = reduce(s, Action::ToggleHelp);
    assert!(s.help_open);
    // Interview mode: a waiting question blocks stepping on, not back.
    let s = reduce(s, Action::ToggleQuiz);
    let s = reduce(s, Action::QuizGate(Some(1)));
    let s = reduce(s, Action::Transport(Transport::Forward));
    assert_eq!(s.step().as_deref(), Some("1"), "blocked");
    let s = reduce(s, Action::Transport(Transport::End));
    assert_eq!(s.step().as_deref(), Some("1"), "blocked");
    let s = reduce(s, Action::QuizGate(None));
    let s = reduce(s, Action::Transport(Transport::Forward));
    assert_eq!(s.step().as_deref(), Some("2"));
    let s = reduce(s, Action::ToggleQuiz);
    let s = reduce(s, Action::TogglePresent);
    assert!(s.present && s.query().to_search().contains("present=1"));
    let s = reduce(s, Action::NextLesson);
    assert_eq!(s.lesson_id().as_deref(), Some("08"));
    let s = reduce(s, Action::ResetLab);
    assert!(s.lab.borrow().transcript(Client::B).is_empty());
    let s = reduce(s, Action::Transport(Transport::TogglePlay));
    assert!(s.playing);
    let s = reduce(s, Action::Transport(Transport::Home));
    assert!(!s.playing);
}

/// A shared counterexample: the URL opens the explore screen with the
/// link (not a lesson), and once the counterexample plays the URL is
/// the link again, with the step the viewer stands on.
#[test]
fn an_explore_link_in_and_out() {
    let q = Query::parse("?lang=en&lesson=05&explore=01-bare-del&seed=7&step=3");
    let s = State::from_query(&q, Lang::En);
    assert!(s.explore && s.lesson.is_none(), "the link wins over lesson=");
    assert_eq!(s.query().to_search(), "?lang=en&explore=01-bare-del&step=3&seed=7");
    let link = s.explore_link.clone().expect("link");
    assert_eq!((link.seed, link.step.as_deref()), (Some(7), Some("3")));
    // What the explore screen hands over once the search is done.
    let spec = locklab_core::explore::designs::parse(locklab_core::explore::designs::FILES[0].1).expect("design");
    let mut job = locklab_core::explore::job::Job::new(&spec).expect("job");
    while !job.step(5_000) {}
    let lesson = Rc::new(job.result().lesson.expect("a counterexample"));
    let s = reduce(s, Action::PlayLesson(lesson, link));
    assert!(!s.explore);
    assert_eq!(s.step().as_deref(), Some("3"), "the link's step");
    assert_eq!(s.query().to_search(), "?lang=en&explore=01-bare-del&step=3&seed=7");
    let s = reduce(s, Action::Transport(Transport::Forward));
    assert_eq!(s.query().to_search(), "?lang=en&explore=01-bare-del&step=4&seed=7");
    // Leaving the counterexample leaves the link.
    let s = reduce(s, Action::SelectLesson("05".into()));
    assert_eq!(s.query().to_search(), "?lang=en&lesson=05&seed=7&driver=sim");
    let s = reduce(s, Action::Explore(true));
    assert!(s.explore_link.is_none());
}

#[test]
fn the_driver_switch_moves_the_lesson_to_the_real_driver() {
    let s = State::from_query(&Query::parse("?lesson=07&step=2"), Lang::En);
    assert_eq!(s.step().as_deref(), Some("2"));
    let s = reduce(s, Action::SetDriver(DriverKind::Real));
    assert_eq!(s.query().to_search(), "?lang=en&lesson=07&seed=1&driver=real");
    assert_eq!(s.connection, 1);
    let real = s.real.clone().unwrap();
    // The same object plays the lesson: what the socket brings moves it.
    let s = reduce(s, Action::Real(RealInput::Opened));
    assert!(real.borrow_mut().take_outbox()[0].contains(r#""id":"07""#));
    let s = reduce(s, Action::Transport(Transport::Forward));
    let s = reduce(
        s,
        Action::Real(RealInput::Message(
            r#"{"type":"lesson","id":"07","steps":5,"names":{"clients":["A","B"],"nodes":["redis"]},"notice":null}"#
                .into(),
        )),
    );
    assert_eq!(real.borrow_mut().take_outbox(), [r#"{"type":"lesson_step"}"#]);
    let step = r#"{"type":"step","result":{"index":0,"actor":"A","shown":"SET","reply":"OK","expected":"OK","ok":true,"at_ms":0,"trace_len":1},"note":null}"#;
    let s = reduce(s, Action::Real(RealInput::Message(step.into())));
    assert_eq!(s.step().as_deref(), Some("1"));
    // Lost: play stops, the banner has its reason; Reconnect opens anew.
    let s = reduce(s, Action::Transport(Transport::TogglePlay));
    let s = reduce(s, Action::Real(RealInput::Closed("gone".into())));
    assert!(!s.playing);
    assert_eq!(real.borrow().problem().as_deref(), Some("gone"));
    let s = reduce(s, Action::Reconnect);
    assert_eq!(s.connection, 2);
    // Back to the simulator: a fresh simulated run of the same lesson.
    let s = reduce(s, Action::SetDriver(DriverKind::Sim));
    assert!(s.real.is_none());
    assert_eq!(s.lesson_id().as_deref(), Some("07"));
    assert_eq!(s.step(), None);
}

fn class_msg(s: State, text: &str) -> State {
    reduce(s, Action::Class(ClassAction::Socket(SocketEvent::Message(text.into()))))
}

/// A follower replays the presenter's moves with its own engine; a
/// move of its own is looking around, "follow again" snaps back.
#[test]
fn a_follower_replays_looks_around_and_follows_again() {
    let s = State::from_query(&Query::parse("?class=abc234&lang=zh"), Lang::En);
    assert_eq!(s.query().to_search(), "?lang=zh&class=ABC234");
    let s = reduce(s, Action::Class(ClassAction::Socket(SocketEvent::Opened)));
    let s = class_msg(
        s,
        r#"{"type":"joined","member":"m1","position":{"lesson":"07","step":2,"seed":7,"dark":true},"score":0,"since":"1-0"}"#,
    );
    assert_eq!(
        (s.lesson_id().as_deref(), s.step().as_deref(), s.seed, s.dark),
        (Some("07"), Some("2"), 7, true)
    );
    let s = class_msg(
        s,
        r#"{"type":"moved","id":"2-0","position":{"lesson":"07","step":3,"seed":7}}"#,
    );
    assert_eq!(s.step().as_deref(), Some("3"));
    let s = reduce(s, Action::Transport(Transport::Back));
    assert!(
        !s.class.as_ref().unwrap().borrow().following,
        "its own step is looking around"
    );
    let s = class_msg(
        s,
        r#"{"type":"moved","id":"3-0","position":{"lesson":"07","step":4,"seed":7}}"#,
    );
    assert_eq!(s.step().as_deref(), Some("2"), "the presenter's move waits");
    let s = reduce(s, Action::Class(ClassAction::FollowAgain));
    assert_eq!(s.step().as_deref(), Some("4"));
    assert!(s.class.as_ref().unwrap().borrow().following);
    assert_eq!(
        s.query().to_search(),
        "?lang=zh&class=ABC234",
        "the URL stays the join URL"
    );
}

/// The presenter's every move goes to the room once; asking sends the
/// reply the step about to run gets (a replay one step on).
#[test]
fn a_presenter_relays_its_moves_and_asks_with_the_reply() {
    let s = State::from_query(&Query::parse("?lesson=01&present=1"), Lang::En);
    let s = reduce(s, Action::Class(ClassAction::Start));
    let class = s.class.clone().unwrap();
    let s = reduce(s, Action::Class(ClassAction::Socket(SocketEvent::Opened)));
    let s = class_msg(s, r#"{"type":"started","code":"ABC234","secret":"k","join_url":"u"}"#);
    let s = reduce(s, Action::Transport(Transport::Forward));
    let out = class.borrow_mut().take_outbox().join("\n");
    assert!(
        out.contains(r#""step":0"#) && out.contains(r#""lesson":"01","step":1"#),
        "{out}"
    );
    let mut s = s;
    while s.next_quiz().is_none() {
        s = reduce(s, Action::Transport(Transport::Forward));
    }
    let (lesson, step, reply) = s.next_quiz().expect("a step with a quiz");
    let here = s.step();
    assert_eq!(s.next_quiz().map(|q| q.1), Some(step));
    assert_eq!(s.step(), here, "asking does not move the presenter");
    let ahead = reduce(s.clone(), Action::Transport(Transport::Forward));
    let got = ahead.lesson.as_ref().unwrap().borrow().results()[step].reply.clone();
    assert_eq!((lesson.as_str(), Some(reply.clone())), ("01", got));
    assert!(!reply.is_empty());
}
