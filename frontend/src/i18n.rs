//! The one UI string table, Chinese and English side by side.
//!
//! Every piece of chrome the app prints is a [`Text`] variant, and
//! [`Text::get`] is one `match` with both languages on the same line, so a
//! missing translation is a compile error rather than a blank button, and a
//! reviewer reads the pair together. Lesson narration does not live here: it
//! comes with each lesson's data file. What a lesson step does (a wait, a
//! fault, a client's belief) comes from core as parameters ([`Shown`]) and
//! is worded here by [`shown`], so 中文 mode is Chinese there too.

use locklab_core::actor::Names;
use locklab_core::lesson::run::Shown;

/// The lab's two languages: core's, so a language chosen on the page is the
/// one core words lessons, events and faults in.
pub use locklab_core::lang::Lang;

/// Every UI string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Text {
    Tagline,
    LessonsLoading,
    LessonsFailed,
    LessonsReload,
    DriverSim,
    DriverTitle,
    LangSwitchLabel,
    Lessons,
    LessonsSoon,
    PickLesson,
    ThemeBasics,
    ThemeRelease,
    ThemeRenewal,
    ThemeReplication,
    ThemeRedlock,
    ThemeFencing,
    ThemePatterns,
    ThemeInterview,
    Timeline,
    TimelineEmpty,
    Node,
    Client,
    Console,
    ConsoleHint,
    ConsolePlaceholder,
    Clock,
    ClockHint,
    Advance,
    ResetLab,
    Resource,
    Believes,
    LockExpired,
    Violation,
    Seconds,
    HelpButton,
    HelpTitle,
    HelpPlay,
    HelpBack,
    HelpForward,
    HelpHome,
    HelpHelp,
    HelpClose,
    HelpHistory,
    HelpRun,
    HelpStepsNote,
    Close,
    Steps,
    Expected,
    Actual,
    Mismatch,
    Speed,
    HelpEnd,
    /// The step counter at the lesson's end (the URL keeps `step=end`).
    StepEnd,
    Outcome,
    OutcomeHeld,
    OutcomeNotYet,
    Faults,
    PauseClient,
    ResumeClient,
    CrashNode,
    PromoteReplica,
    CutLink,
    HealLink,
    JumpClock,
    FaultsHint,
    ExportSvg,
    ZoomIn,
    ZoomOut,
    ZoomReset,
    QuizMode,
    Predict,
    Check,
    Right,
    Wrong,
    FreeLab,
    OffScript,
    ConsoleLessonHint,
    Source,
    Scrub,
    Restart,
    Score,
    // The real driver.
    DriverReal,
    RealConnecting,
    RealOffline,
    RealManaged,
    RealExternalShort,
    RealExternal,
    RealTime,
    RealBusy,
    SimLoading,
    SimFailed,
    RealClock,
    RealFaultsHint,
    RealTopology,
    RealPause,
    RealResume,
    RealRestart,
    RealCutReplication,
    RealLost,
    RealReconnecting,
    RealReconnectNow,
    RealRedisDown,
    RealSimOnly,
    RealFactorHint,
    RealConsoleHint,
    RealRedisShort,
    ScoreHint,
    ScoreReset,
    YourPrediction,
    HelpPan,
    TimelinePan,
    NextLesson,
    PresentHint,
    Theme,
    PresentExit,
    NotesOpen,
    NotesTitle,
    NotesWaiting,
    NotesNone,
    NotesFailed,
    NotesStep,
    NotesNext,
    Present,
    Legend,
    ExportPng,
    AxisUnit,
    RunShowed,
    RunHeld,
    ArticleExpects,
    QuizBlocks,
    Missed,
    Details,
    More,
    Less,
    OffScriptDone,
    ClassStart,
    ClassTitle,
    ClassJoinTitle,
    ClassCodeLabel,
    ClassNameLabel,
    ClassJoin,
    ClassBadCode,
    ClassJoinAt,
    ClassJoined,
    ClassHide,
    ClassEnd,
    ClassAsk,
    ClassReveal,
    ClassAnsweredOf,
    ClassAnsweredBy,
    ClassFollowing,
    ClassFollowAgain,
    ClassScore,
    ClassAnswerSent,
    ClassAnswerIs,
    ClassRight,
    ClassWrong,
    ClassConnecting,
    ClassLost,
    ClassSummary,
    ClassDownloadCsv,
    ClassDownloadMd,
    ClassClose,
    ClassLive,
    ClassDrillTitle,
    ClassDrillAsk,
    ClassDrillOwn,
    ClassDrillTake,
    ClassDrillFound,
    ClassDrillHeld,
    ClassDrillBoard,
    ClassDrillFoundBy,
    ClassDrillPick,
    // Interview mode hides what it asks (issue 38).
    NarrationHidden,
    StepHidden,
    OutcomeHidden,
    TimedStart,
    TimedPlaceholder,
    TimedDone,
    RubricNote,
    RubricScore,
    MockOpen,
    MockTitle,
    MockSource,
    MockRestart,
    MockClose,
    MockResults,
    MockNext,
    MockScores,
    MockThisTime,
    MockAllTime,
    MockNothingToRevisit,
    MockRevisit,
    MockMissedFirst,
    /// The explore screen's search modes (issue 44).
    ExploreMode,
    ExploreModeSample,
    ExploreModeExhaustive,
    ExploreStop,
    ExploreStates,
    ExploreStatesPerSecond,
    ExploreFrontier,
    ExploreDepth,
    ExploreStateLimit,
    ExploreShortest,
    ExploreStepsHead,
    ExploreStepCol,
    ExploreEventCol,
    ExploreHoldersCol,
    ExploreHolds,
    ExploreBroken,
    TimelineStepsOk,
    TimelineStepsBad,
}

impl Text {
    /// The string in `lang`.
    // long: the message table: one (zh, en) pair per Text
    pub fn get(self, lang: Lang) -> &'static str {
        let (zh, en) = match self {
            Text::Tagline => ("Redis 分布式锁实验室", "Redis distributed locks, hands on"),
            Text::LessonsLoading => ("正在加载课程…", "Loading the lessons…"),
            Text::LessonsFailed => ("课程加载失败", "The lessons could not be loaded"),
            Text::LessonsReload => ("请刷新页面重试。", "Reload the page to try again."),
            Text::DriverSim => ("模拟器", "simulator"),
            Text::DriverTitle => (
                "模拟器：命令在浏览器内的模拟 Redis 8.4 节点上执行，时间是虚拟的；真实 Redis：同样的课程经后端在真实 redis-server 上执行",
                "Simulator: commands run on a simulated Redis 8.4 node inside your browser, on a virtual clock. Real Redis: the same lessons run on real redis-server through the backend",
            ),
            Text::DriverReal => ("真实 Redis", "real Redis"),
            Text::RealConnecting => ("正在连接后端…", "connecting to the backend…"),
            Text::RealOffline => ("未连接", "not connected"),
            Text::RealManaged => ("托管", "managed"),
            Text::RealExternalShort => ("你自己的服务器", "your own server"),
            Text::RealExternal => (
                "这是你自己的 redis-server：实验室从不杀死、暂停或重新配置它，所以这里没有故障按钮。所有键都在本会话的前缀下。",
                "This is your own redis-server: the lab never kills, pauses or reconfigures it, so there are no fault buttons here. Every key lives under this session's prefix.",
            ),
            Text::RealTime => ("时间压缩", "time"),
            Text::RealBusy => ("等待真实服务器的回复…", "waiting for the real server…"),
            Text::SimLoading => ("正在载入模拟器…", "loading the simulator…"),
            Text::SimFailed => ("模拟器未能载入", "the simulator did not load"),
            Text::RealClock => ("真实时间：它自己流逝", "real time: it passes by itself"),
            Text::RealFaultsHint => (
                "作用于后端在本机回环端口上启动的真实进程：暂停是 SIGSTOP，崩溃是 SIGKILL，重启不带持久化。",
                "These act on the real processes the backend started on loopback ports: pause is SIGSTOP, crash is SIGKILL, restart comes back without persistence.",
            ),
            Text::RealTopology => ("拓扑", "topology"),
            Text::RealPause => ("暂停", "pause"),
            Text::RealResume => ("恢复", "resume"),
            Text::RealRestart => ("重启", "restart"),
            Text::RealCutReplication => ("切断复制", "cut replication"),
            Text::RealLost => ("与实验室后端的连接断开了", "Lost the connection to the lab backend"),
            Text::RealReconnecting => ("{} 秒后重连", "reconnecting in {} s"),
            Text::RealReconnectNow => ("立即重连", "reconnect now"),
            Text::RealRedisDown => ("后端连不上 Redis", "The backend cannot reach Redis"),
            Text::RealSimOnly => ("仅模拟器", "simulator only"),
            Text::RealRedisShort => ("连不上 Redis", "Redis unreachable"),
            Text::RealConsoleHint => (
                "每个客户端是真实 redis-server 上的一条连接；键存放在本会话的前缀下，显示时去掉前缀",
                "each client is a connection to real redis-server; keys live under this session's prefix, shown without it",
            ),
            Text::RealFactorHint => (
                "时间压缩：TTL 与等待除以这个倍数。真实服务器上，你在两步之间花的时间也算课程时间：÷100 时 15 s 的锁只剩 150 ms，点下一步之前就过期了。",
                "Time compression: TTLs and waits are divided by it. On a real server the time you spend between steps is lesson time too: at ÷100 a 15 s lock lasts 150 ms and is gone before your next click.",
            ),
            Text::LangSwitchLabel => ("界面语言", "Language"),
            Text::Lessons => ("课程", "Lessons"),
            Text::LessonsSoon => (
                "课程内容即将上线；现在可以在下方控制台自由实验。",
                "Lesson steps are on their way; the console below works now.",
            ),
            Text::PickLesson => (
                "从左侧选一课，或直接在控制台实验",
                "Pick a lesson on the left, or experiment in the console",
            ),
            Text::ThemeBasics => ("基础", "Basics"),
            Text::ThemeRelease => ("释放锁", "Release"),
            Text::ThemeRenewal => ("过期与续期", "Expiry and renewal"),
            Text::ThemeReplication => ("主从复制", "Replication"),
            Text::ThemeRedlock => ("Redlock", "Redlock"),
            Text::ThemeFencing => ("防护令牌", "Fencing"),
            Text::ThemePatterns => ("工程实践", "Patterns"),
            Text::ThemeInterview => ("面试", "Interview"),
            Text::Timeline => ("时间线", "Timeline"),
            Text::TimelineEmpty => (
                "在控制台输入命令，例如 SET lock:order:1 token-A-111 NX PX 30000",
                "Type a command in the console, e.g. SET lock:order:1 token-A-111 NX PX 30000",
            ),
            Text::Node => ("节点", "node"),
            Text::Client => ("客户端", "client"),
            Text::Console => ("控制台", "Console"),
            Text::ConsoleHint => (
                "每个客户端一条独立连接，连到同一个模拟节点",
                "one connection per client, all to the same simulated node",
            ),
            Text::ConsolePlaceholder => ("输入 Redis 命令，回车执行", "type a Redis command, Enter to run"),
            Text::Clock => ("时钟", "Clock"),
            Text::ClockHint => (
                "拨快节点时钟，观察锁过期",
                "move the node's clock forward and watch locks expire",
            ),
            Text::Advance => ("快进", "advance"),
            Text::ResetLab => ("重置", "reset"),
            Text::Resource => ("受保护资源", "resource"),
            Text::Believes => ("认为自己持有", "believes it holds"),
            Text::LockExpired => ("已过期", "expired"),
            Text::Violation => ("违反", "violated"),
            Text::Seconds => ("秒", "s"),
            Text::HelpButton => ("快捷键", "shortcuts"),
            Text::HelpTitle => ("键盘快捷键", "Keyboard shortcuts"),
            Text::HelpPlay => ("播放 / 暂停", "play / pause"),
            Text::HelpBack => ("上一步", "previous step"),
            Text::HelpForward => ("下一步", "next step"),
            Text::HelpHome => ("回到开头", "back to the start"),
            Text::HelpHelp => ("显示 / 隐藏本帮助", "show / hide this help"),
            Text::HelpClose => ("关闭帮助", "close this help"),
            Text::HelpHistory => ("控制台：上一条 / 下一条命令", "console: previous / next command"),
            Text::HelpRun => ("控制台：执行命令", "console: run the command"),
            Text::HelpStepsNote => (
                "步骤快捷键作用于课程步骤；光标在控制台里时不会触发。",
                "Step keys drive lesson steps; they are ignored while you type in the console.",
            ),
            Text::Close => ("关闭", "close"),
            Text::Steps => ("步骤", "Steps"),
            Text::Expected => ("期望", "expected"),
            Text::Actual => ("实际", "actual"),
            Text::Mismatch => ("与原文不符", "differs from the article"),
            Text::Speed => ("速度", "speed"),
            Text::HelpEnd => ("跳到结尾", "jump to the end"),
            Text::StepEnd => ("结束", "end"),
            Text::Outcome => ("结论", "Outcome"),
            Text::OutcomeHeld => ("结果与课程一致", "the run shows what the lesson teaches"),
            Text::OutcomeNotYet => ("走完全部步骤后检查结论", "the outcome is checked at the last step"),
            Text::Faults => ("故障注入", "Faults"),
            Text::PauseClient => ("暂停", "pause"),
            Text::ResumeClient => ("恢复", "resume"),
            Text::CrashNode => ("宕机", "crash"),
            Text::PromoteReplica => ("提升从节点", "promote replica"),
            Text::CutLink => ("断开链路", "cut link"),
            Text::HealLink => ("恢复链路", "heal link"),
            Text::JumpClock => ("时钟跳 +10 s", "clock +10 s"),
            Text::FaultsHint => ("在当前时刻注入，结果出现在时间线上", "applied now; the timeline shows what follows"),
            Text::ExportSvg => ("导出 SVG", "export SVG"),
            Text::ZoomIn => ("放大", "zoom in"),
            Text::ZoomOut => ("缩小", "zoom out"),
            Text::ZoomReset => ("适合宽度", "fit"),
            Text::QuizMode => ("面试模式", "interview mode"),
            Text::Predict => ("先预测回复：", "predict the reply:"),
            Text::Check => ("提交", "check"),
            Text::ClassStart => ("开始课堂", "Start a class"),
            Text::ClassTitle => ("课堂", "Class"),
            Text::ClassJoinTitle => ("加入课堂", "Join a class"),
            Text::ClassCodeLabel => ("6 位课堂码", "6-character class code"),
            Text::ClassNameLabel => ("昵称（可不填）", "Nickname (optional)"),
            Text::ClassJoin => ("加入", "Join"),
            Text::ClassBadCode => ("课堂码是 6 位字母和数字", "A class code is 6 letters and digits"),
            Text::ClassJoinAt => ("扫码或输入课堂码加入", "Scan, or type the code, to join"),
            Text::ClassJoined => ("已加入 {} 人", "{} joined"),
            Text::ClassHide => ("收起", "Hide"),
            Text::ClassEnd => ("结束课堂", "End class"),
            Text::ClassAsk => ("向全班提问", "Ask the room"),
            Text::ClassReveal => ("揭晓答案", "Reveal"),
            Text::ClassAnsweredOf => ("{m} 人中 {n} 人已作答", "{n} of {m} answered"),
            Text::ClassAnsweredBy => ("已作答：", "Answered: "),
            Text::ClassFollowing => ("正在跟随讲师", "Following the presenter"),
            Text::ClassFollowAgain => ("回到讲师的位置", "Follow again"),
            Text::ClassScore => ("课堂得分", "Class score"),
            Text::ClassAnswerSent => ("已提交，等待揭晓", "Answer recorded: wait for the reveal"),
            Text::ClassAnswerIs => ("正确答案：", "The answer: "),
            Text::ClassRight => ("答对", "Right"),
            Text::ClassWrong => ("答错", "Wrong"),
            Text::ClassConnecting => ("正在连接课堂…", "Connecting to the class…"),
            Text::ClassLost => ("与课堂断开，{} 秒后重连", "Class link lost; retrying in {} s"),
            Text::ClassSummary => ("课堂总结", "Class summary"),
            Text::ClassDownloadCsv => ("下载 CSV", "Download CSV"),
            Text::ClassDownloadMd => ("下载 Markdown", "Download Markdown"),
            Text::ClassClose => ("关闭", "Close"),
            Text::ClassLive => ("讲师在真实 Redis 上的运行（转播）", "The presenter's run on real Redis, relayed"),
            Text::ClassDrillTitle => ("攻破我的锁：讲师的练习", "Break my lock: the trainer's drill"),
            Text::ClassDrillAsk => (
                "用你设备上的探索器搜索 {} 的反例。",
                "Search {} for a counterexample with the explorer on your device.",
            ),
            Text::ClassDrillOwn => ("讲师自己写的设计", "the trainer's own design"),
            Text::ClassDrillTake => ("开始练习", "Take the drill"),
            Text::ClassDrillFound => ("你找到了反例（搜索了 {} 个调度）", "You found a counterexample ({} schedules searched)"),
            Text::ClassDrillHeld => ("{} 个调度中没有反例：设计经受住了", "No counterexample in {} schedules: the design held"),
            Text::ClassDrillBoard => (
                "练习 {d}：{m} 人中 {n} 人已搜索，{k} 人找到反例",
                "Drill {d}: {n} of {m} searched, {k} found a counterexample",
            ),
            Text::ClassDrillFoundBy => ("找到反例：", "Found one: "),
            Text::ClassDrillPick => ("推送练习…", "Push a drill…"),
            Text::Right => ("答对了", "right"),
            Text::Wrong => ("不对，实际是", "not quite; the reply is"),
            Text::FreeLab => ("自由实验", "free lab"),
            Text::OffScript => (
                "可以在控制台、故障注入和时钟里脱离脚本操作；后退后再前进会重放这些操作，在较早的步骤做新操作会丢弃其后的记录。",
                "You may go off script with the console, the faults and the clock; stepping back and forward replays what you did, and doing something new at an earlier step drops what came after it.",
            ),
            Text::ConsoleLessonHint => ("每个客户端连到本课的同一个模拟世界", "each client is connected to this lesson's simulated world"),
            Text::Source => ("出处", "source"),
            Text::Scrub => ("拖动到任一步", "scrub to any step"),
            Text::Restart => ("重新开始", "restart"),
            Text::Score => ("得分", "score"),
            Text::ScoreHint => (
                "每一步只计第一次预测；后退重答不重复计分",
                "only each step's first prediction counts; stepping back to answer again does not count twice",
            ),
            Text::ScoreReset => ("清零", "reset score"),
            Text::YourPrediction => ("你的预测", "you said"),
            Text::HelpPan => ("时间线（获得焦点时）：左右平移；放大后也可拖动", "timeline (when focused): pan; when zoomed in, drag it too"),
            Text::OffScriptDone => ("本次运行中脱离脚本的操作：", "off-script actions in this run:"),
            Text::NextLesson => ("下一课 →", "next lesson →"),
            Text::PresentHint => ("PageDown / PageUp 逐步 · P 退出", "PageDown / PageUp step · P exits"),
            Text::Theme => ("明 / 暗", "light / dark"),
            Text::PresentExit => ("退出演示", "exit presenter"),
            Text::NotesOpen => ("备注窗口", "notes window"),
            Text::NotesTitle => ("讲师备注", "Trainer's notes"),
            Text::NotesWaiting => (
                "等待演示窗口：在那里打开一课（演示模式），这里会跟着显示它的备注。",
                "Waiting for the presenter window: open a lesson there (presenter mode) and its notes follow here.",
            ),
            Text::NotesNone => ("这一课没有备注。", "This lesson has no notes."),
            Text::NotesFailed => (
                "备注只由本机的 locklab 后端提供（./scripts/lab），取不到：",
                "The notes come only from the lab's own backend on this machine (./scripts/lab); they could not be had:",
            ),
            Text::NotesStep => ("第 {} 步", "step {}"),
            Text::NotesNext => ("下一条：", "next:"),
            Text::Present => ("演示模式 (P)", "present (P)"),
            Text::Legend => ("图例", "legend"),
            Text::ExportPng => ("导出 PNG", "export PNG"),
            Text::AxisUnit => ("时间（秒）", "time (seconds)"),
            Text::RunShowed => ("本次运行：", "This run shows: "),
            Text::RunHeld => ("本次运行：没有违反任何不变量。", "This run: no invariant was broken."),
            Text::ArticleExpects => ("文章预期：", "The article expects: "),
            Text::QuizBlocks => ("先回答问题再继续", "answer the question to go on"),
            Text::Missed => ("答错的问题", "Questions you missed"),
            Text::More => ("展开全文", "more"),
            Text::Less => ("收起", "less"),
            Text::Details => ("课程内容", "lesson text and steps"),
            Text::NarrationHidden => (
                "面试模式：课程导语会透露答案，答完第一个问题后显示。",
                "Interview mode: the introduction gives answers away; it is shown once you answer the first question.",
            ),
            Text::StepHidden => ("（走到这一步时显示）", "(shown when you reach this step)"),
            Text::TimedStart => ("开始计时", "start the clock"),
            Text::TimedPlaceholder => ("计时开始后在这里写下你的回答（或说出来，再记下要点）", "once the clock runs, type your answer here (or say it aloud and note the points)"),
            Text::TimedDone => ("答完了", "done"),
            Text::RubricNote => (
                "对照文章的要点，勾选你的回答讲到了的（自评，计入本课得分）；之后是参考答案和演示。",
                "Tick the article's points your answer made (self-scored, counted in the lesson's score); the model answer and the demonstrations follow.",
            ),
            Text::RubricScore => ("记分并继续", "score it and go on"),
            Text::MockOpen => ("模拟面试", "Mock interview"),
            Text::MockTitle => ("模拟面试：Redis 分布式锁如何实现？", "Mock interview: how do you implement a distributed lock with Redis?"),
            Text::MockSource => (
                "按面经（文章 C）的五个追问进行；下一题取决于你的回答，答错先看演示。",
                "Article C's five follow-ups; the next question depends on your answer, and a wrong one shows the demonstration first.",
            ),
            Text::MockRestart => ("重新开始", "start over"),
            Text::MockClose => ("关闭", "close"),
            Text::MockResults => ("查看结果", "see the results"),
            Text::MockNext => ("下一题", "next question"),
            Text::MockScores => ("各主题得分", "Score per topic"),
            Text::MockThisTime => ("本次", "this time"),
            Text::MockAllTime => ("累计", "all interviews"),
            Text::MockNothingToRevisit => ("全部答对：没有需要复习的课程。", "All right: no lesson to revisit."),
            Text::MockRevisit => ("建议复习的课程", "Lessons to revisit"),
            Text::MockMissedFirst => ("答错的问题下次会先问。", "The questions you missed come first next time."),
            Text::ExploreMode => ("搜索方式", "Search"),
            Text::ExploreModeSample => ("抽样（随机游走）", "sample (random walks)"),
            Text::ExploreModeExhaustive => ("界限内穷尽", "exhaustive within bounds"),
            Text::ExploreStop => ("停止", "Stop"),
            Text::ExploreStates => ("个状态已探索", "states explored"),
            Text::ExploreStatesPerSecond => ("状态/秒", "states/s"),
            Text::ExploreFrontier => ("前沿", "frontier"),
            Text::ExploreDepth => ("深度", "depth"),
            Text::ExploreStateLimit => ("状态上限", "state limit"),
            Text::ExploreShortest => ("最短反例：", "Shortest counterexample:"),
            Text::ExploreStepsHead => (
                "反例逐步：每一步之后不变量监视器的判断（✓ 成立，✗ 被破坏），以及谁认为自己持有锁",
                "The counterexample step by step: after each step, which invariants the monitor finds holding (✓ holds, ✗ broken), and who believes it holds the lock",
            ),
            Text::ExploreStepCol => ("步", "step"),
            Text::ExploreEventCol => ("事件", "event"),
            Text::ExploreHoldersCol => ("认为持有锁", "believes it holds"),
            Text::ExploreHolds => ("成立", "holds"),
            Text::ExploreBroken => ("被破坏", "broken"),
            Text::TimelineStepsOk => ("时间轴上的每一步：所有不变量成立", "each step on the time axis: every invariant holds"),
            Text::TimelineStepsBad => ("有不变量被破坏（指向圆点看每个不变量）", "an invariant is broken (point at a dot for each one)"),
            Text::OutcomeHidden => ("面试模式：结论在最后一步之后显示。", "Interview mode: the outcome is shown after the last step."),
            Text::TimelinePan => ("时间线：放大后可拖动或用 Shift+←/→ 平移", "timeline: when zoomed in, drag or use Shift+←/→ to pan"),
        };
        match lang {
            Lang::Zh => zh,
            Lang::En => en,
        }
    }
}

/// A lesson step in `lang`: core's wording of it ([`Shown::english`], what
/// the CLI transcript prints, or [`Shown::chinese`]). Commands, keys,
/// values and node names stay as typed.
/// `12 s`, `1.5 s`, `0.25 s`: virtual time for people.
pub fn seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        let s = format!("{:.3}", ms as f64 / 1000.0);
        format!("{} s", s.trim_end_matches('0'))
    }
}

/// A line typed off script, for the outcome box.
pub fn typed_off_script(who: &str, line: &str, lang: Lang) -> String {
    match lang {
        Lang::En => format!("{who} typed `{line}`"),
        Lang::Zh => format!("{who} 输入了 `{line}`"),
    }
}

/// The clock moved forward off script, for the outcome box.
pub fn clock_moved(ms: u64, lang: Lang) -> String {
    let by = seconds(ms);
    match lang {
        Lang::En => format!("the clock moved forward {by}"),
        Lang::Zh => format!("时钟前进了 {by}"),
    }
}

/// What a lesson's outcome expects, in a few words: "two holders", "no
/// “two holders”", "no broken invariant".
pub fn expected_outcome(outcome: &locklab_core::lesson::Outcome, lang: Lang) -> String {
    let title = outcome.invariant.invariant().map(|inv| match lang {
        Lang::En => inv.title(),
        Lang::Zh => inv.title_zh(),
    });
    match (title, outcome.broken, lang) {
        (Some(t), true, _) => t.to_owned(),
        (Some(t), false, Lang::En) => format!("no “{t}”"),
        (Some(t), false, Lang::Zh) => format!("不出现“{t}”"),
        (None, _, Lang::En) => "no broken invariant".to_owned(),
        (None, _, Lang::Zh) => "不违反任何不变量".to_owned(),
    }
}

/// The outcome box's sentence when the run's outcome is not the article's
/// and the user went off script: the simulator is deterministic and the
/// scripted run is the article's (every lesson's test checks it), so what
/// the user did is the only difference, and it is named.
pub fn changed_by_off_script(expected: &str, actions: &[String], lang: Lang) -> String {
    match lang {
        Lang::En => format!(
            "Not what the article expects ({expected}), because of what you did off script: {}. Step back before it and play on to see the article's run.",
            actions.join("; ")
        ),
        Lang::Zh => format!(
            "与文章的预期（{expected}）不同，原因是你在脚本之外的操作：{}。退回到这些操作之前再往下播放，就能看到文章中的运行。",
            actions.join("；")
        ),
    }
}

pub fn shown(step: &Shown, names: &Names, lang: Lang) -> String {
    step.text(names, lang)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page words steps from its own lessons (programs worded, not
    /// decoded): the same English as the runner's transcript, and Chinese.
    #[test]
    fn world_steps_read_in_chinese_and_as_core_words_them_in_english() {
        use locklab_core::lesson::run::{self, LessonRun};
        for lesson in crate::catalog::all() {
            let mut run = LessonRun::new(&lesson.clone().decoded().unwrap()).unwrap();
            let before: Vec<String> = (0..lesson.len())
                .map(|i| {
                    shown(
                        &run::shown(lesson, i, &Default::default()).unwrap(),
                        run.world().names(),
                        Lang::Zh,
                    )
                })
                .collect();
            run.run_all().unwrap();
            let names = run.world().names();
            for r in run.results() {
                let step = run::shown(lesson, r.index, run.write_tokens()).unwrap();
                assert_eq!(
                    shown(&step, names, Lang::En),
                    r.shown,
                    "lesson {} step {}",
                    lesson.id,
                    r.index + 1
                );
                let zh = shown(&step, names, Lang::Zh);
                // Commands are typed text, and a note is the lesson's own 中文.
                if !matches!(step, Shown::Cmd { .. } | Shown::Say(_)) {
                    assert!(
                        zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
                        "lesson {}: {zh}",
                        lesson.id
                    );
                    assert!(
                        !zh.contains("FAULT") && !zh.contains("believes") && !zh.starts_with("wait "),
                        "{zh}"
                    );
                }
                if !matches!(step, Shown::Write { .. }) {
                    assert_eq!(before[r.index], zh, "a step reads the same before and after it runs");
                }
            }
        }
        let l = crate::catalog::find("05").unwrap();
        let run = LessonRun::new(&l.clone().decoded().unwrap()).unwrap();
        let zh: Vec<String> = (0..l.len())
            .map(|i| {
                shown(
                    &run::shown(l, i, &Default::default()).unwrap(),
                    run.world().names(),
                    Lang::Zh,
                )
            })
            .collect();
        assert!(zh.iter().any(|s| s.starts_with("故障：暂停 A")), "{zh:?}");
        assert!(zh.iter().any(|s| s.starts_with("等待 ")), "{zh:?}");
    }

    #[test]
    fn both_languages_say_something_different_for_prose() {
        assert_ne!(Text::Tagline.get(Lang::Zh), Text::Tagline.get(Lang::En));
        assert!(!Text::Close.get(Lang::Zh).is_empty());
    }
}
