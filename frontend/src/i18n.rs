//! The one UI string table, Chinese and English side by side.
//!
//! Every piece of chrome the app prints is a [`Text`] variant, and
//! [`Text::get`] is one `match` with both languages on the same line, so a
//! missing translation is a compile error rather than a blank button, and a
//! reviewer reads the pair together. Lesson narration does not live here: it
//! comes with each lesson's data file.

use std::fmt;

/// The two languages of the lab. The articles the lessons come from are
/// Chinese; the code, the commands and the replies are the same in both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Lang {
    Zh,
    #[default]
    En,
}

impl Lang {
    /// Both, in the order the switch shows them.
    pub const ALL: [Lang; 2] = [Lang::Zh, Lang::En];

    /// The code used in the URL (`?lang=zh`) and in `<html lang>`.
    pub fn code(self) -> &'static str {
        match self {
            Lang::Zh => "zh",
            Lang::En => "en",
        }
    }

    /// The language's own name, as the switch labels it.
    pub fn native_name(self) -> &'static str {
        match self {
            Lang::Zh => "中文",
            Lang::En => "English",
        }
    }

    /// Parse a URL code or a browser language tag (`zh`, `zh-CN`, `en-US`).
    pub fn parse(s: &str) -> Option<Lang> {
        let primary = s.split(['-', '_']).next().unwrap_or_default();
        if primary.eq_ignore_ascii_case("zh") {
            Some(Lang::Zh)
        } else if primary.eq_ignore_ascii_case("en") {
            Some(Lang::En)
        } else {
            None
        }
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

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
}

impl Text {
    /// The string in `lang`.
    pub fn get(self, lang: Lang) -> &'static str {
        let (zh, en) = match self {
            Text::Tagline => ("Redis 分布式锁实验室", "Redis distributed locks, hands on"),
            Text::LessonsLoading => ("正在加载课程…", "Loading the lessons…"),
            Text::LessonsFailed => ("课程加载失败", "The lessons could not be loaded"),
            Text::LessonsReload => ("请刷新页面重试。", "Reload the page to try again."),
            Text::DriverSim => ("模拟器", "simulator"),
            Text::DriverTitle => (
                "命令在浏览器内的模拟 Redis 8.4 节点上执行，时间是虚拟的",
                "Commands run on a simulated Redis 8.4 node inside your browser, on a virtual clock",
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
            Text::Right => ("答对了", "right"),
            Text::Wrong => ("不对，实际是", "not quite; the reply is"),
            Text::FreeLab => ("自由实验", "free lab"),
            Text::OffScript => ("可以在控制台里脱离脚本操作；后退或重放会丢弃这些命令。", "You may go off script in the console; stepping back replays the lesson without those lines."),
            Text::ConsoleLessonHint => ("每个客户端连到本课的同一个模拟世界", "each client is connected to this lesson's simulated world"),
            Text::Source => ("出处", "source"),
            Text::Scrub => ("拖动到任一步", "scrub to any step"),
            Text::Restart => ("重新开始", "restart"),
            Text::Score => ("得分", "score"),
        };
        match lang {
            Lang::Zh => zh,
            Lang::En => en,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_codes_and_browser_tags() {
        assert_eq!(Lang::parse("zh"), Some(Lang::Zh));
        assert_eq!(Lang::parse("zh-CN"), Some(Lang::Zh));
        assert_eq!(Lang::parse("EN_us"), Some(Lang::En));
        assert_eq!(Lang::parse("fr"), None);
        assert_eq!(Lang::parse(""), None);
        for lang in Lang::ALL {
            assert_eq!(Lang::parse(lang.code()), Some(lang));
        }
    }

    #[test]
    fn both_languages_say_something_different_for_prose() {
        assert_ne!(Text::Tagline.get(Lang::Zh), Text::Tagline.get(Lang::En));
        assert!(!Text::Close.get(Lang::Zh).is_empty());
    }
}
