//! The lesson list, until the lesson files arrive.
//!
//! A static table of the 36 lessons in `LESSONS.md`: id, theme and title in
//! both languages. It exists so the shell can be laid out, linked to
//! (`?lesson=05`) and tested before the lesson runner exists; when
//! `lessons/*.toml` and core's lesson model land, the list is built from them
//! and this table goes away.

use crate::i18n::{Lang, Text};

/// The themes the list is grouped by, in teaching order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Theme {
    Basics,
    Release,
    Renewal,
    Replication,
    Redlock,
    Fencing,
    Patterns,
    Interview,
}

impl Theme {
    pub const ALL: [Theme; 8] = [
        Theme::Basics,
        Theme::Release,
        Theme::Renewal,
        Theme::Replication,
        Theme::Redlock,
        Theme::Fencing,
        Theme::Patterns,
        Theme::Interview,
    ];

    pub fn title(self, lang: Lang) -> &'static str {
        match self {
            Theme::Basics => Text::ThemeBasics,
            Theme::Release => Text::ThemeRelease,
            Theme::Renewal => Text::ThemeRenewal,
            Theme::Replication => Text::ThemeReplication,
            Theme::Redlock => Text::ThemeRedlock,
            Theme::Fencing => Text::ThemeFencing,
            Theme::Patterns => Text::ThemePatterns,
            Theme::Interview => Text::ThemeInterview,
        }
        .get(lang)
    }

    /// Stable name for CSS and tests.
    pub fn slug(self) -> &'static str {
        match self {
            Theme::Basics => "basics",
            Theme::Release => "release",
            Theme::Renewal => "renewal",
            Theme::Replication => "replication",
            Theme::Redlock => "redlock",
            Theme::Fencing => "fencing",
            Theme::Patterns => "patterns",
            Theme::Interview => "interview",
        }
    }
}

/// One row of the catalogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LessonInfo {
    pub id: &'static str,
    pub theme: Theme,
    pub zh: &'static str,
    pub en: &'static str,
}

impl LessonInfo {
    pub fn title(&self, lang: Lang) -> &'static str {
        match lang {
            Lang::Zh => self.zh,
            Lang::En => self.en,
        }
    }
}

const fn l(id: &'static str, theme: Theme, zh: &'static str, en: &'static str) -> LessonInfo {
    LessonInfo { id, theme, zh, en }
}

/// Every lesson, in id order.
pub const LESSONS: &[LessonInfo] = {
    use Theme::*;
    &[
        l("01", Basics, "原子加锁：SET key token NX PX ttl", "Atomic acquire: SET key token NX PX ttl"),
        l("02", Basics, "实验 6.1：照原文执行", "Experiment 6.1 exactly as written"),
        l("03", Basics, "先 SETNX 再 EXPIRE，中间崩溃", "SETNX then EXPIRE, crash in between"),
        l("04", Basics, "用固定值代替令牌", "A fixed value instead of a token"),
        l("05", Release, "过期后直接 DEL：时序灾难", "Bare DEL after expiry: the timing disaster"),
        l("06", Release, "用 Lua 比较后删除，安全释放", "Safe release with a Lua compare-and-delete"),
        l("07", Release, "实验 6.2：照原文执行", "Experiment 6.2 exactly as written"),
        l("08", Release, "DELEX key IFEQ token（Redis 8.4）", "DELEX key IFEQ token (Redis 8.4)"),
        l("09", Release, "客户端先 GET 再 DEL 不是原子的", "GET then DEL from the client is not atomic"),
        l("10", Release, "GETDEL 不是安全的解锁", "GETDEL is not a safe unlock"),
        l("11", Renewal, "TTL 也是工作预算", "The TTL is also the work budget"),
        l("12", Renewal, "续期：只有持有者能延长（实验 6.3）", "Renewal: only the owner may extend (experiment 6.3)"),
        l("13", Renewal, "看门狗续期（Redisson 风格）", "Watchdog renewal (Redisson style)"),
        l("14", Renewal, "无上限的看门狗永不释放", "An unbounded watchdog never releases"),
        l("15", Replication, "异步复制故障转移：两个持有者", "Async replication failover: two holders"),
        l("16", Replication, "WAIT 缩小但不能消除窗口", "WAIT narrows, but does not close, the window"),
        l("17", Redlock, "5 个独立主节点上的 Redlock", "Redlock on five independent masters"),
        l("18", Redlock, "Redlock 单节点超时与随机退避", "Redlock per-node timeouts and random backoff"),
        l("19", Redlock, "在多数节点上延长 Redlock", "Redlock extension on a majority"),
        l("20", Redlock, "时钟跳变与漂移破坏 TTL 假设", "Clock jumps and drift break TTL assumptions"),
        l("21", Redlock, "Redlock 下无持久化重启", "Restart without persistence under Redlock"),
        l("22", Fencing, "防护令牌（fencing token）", "Fencing tokens"),
        l("23", Patterns, "伪代码骨架：重试与退避", "Pseudo-code skeleton with retry and backoff"),
        l("24", Patterns, "找 bug：指数退避的 acquire_lock", "Spot the bugs: an exponential-backoff acquire_lock"),
        l("25", Patterns, "锁粒度：全局、按条目、分片", "Lock granularity: global, per item, shards"),
        l("26", Patterns, "热点锁竞争：固定重试与随机退避", "Hot lock contention: fixed retry vs random backoff"),
        l("27", Patterns, "健康指标：成功率、等待时间、重试", "Health metrics: success rate, wait time, retries"),
        l("28", Patterns, "锁加 WATCH/MULTI/EXEC 扣库存", "Lock plus WATCH/MULTI/EXEC stock decrement"),
        l("29", Patterns, "可重入锁：哈希里的持有者与计数", "Reentrant lock: owner and counter in a hash"),
        l("30", Patterns, "Redis Functions：#!lua name=locklib", "Redis Functions: #!lua name=locklib"),
        l("31", Patterns, "脚本必须声明键（Cluster）", "Scripts must declare their keys (Cluster)"),
        l("32", Patterns, "客户端与服务端时钟不一致", "Client and server clocks disagree"),
        l("33", Patterns, "丢失回复不等于部分执行", "A lost reply is not partial execution"),
        l("34", Fencing, "业务幂等才是最后的安全网", "Business idempotency as the real safety net"),
        l("35", Interview, "面试：60 秒回答与五个追问", "Interview: the 60-second answer and five follow-ups"),
        l("36", Interview, "如何选锁：Redis、Redlock、ZooKeeper、etcd", "Choosing a lock: Redis, Redlock, ZooKeeper, etcd"),
    ]
};

/// Look a lesson up by id.
pub fn find(id: &str) -> Option<&'static LessonInfo> {
    LESSONS.iter().find(|l| l.id == id)
}

/// The lessons of one theme, in id order.
pub fn by_theme(theme: Theme) -> impl Iterator<Item = &'static LessonInfo> {
    LESSONS.iter().filter(move |l| l.theme == theme)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_sorted_and_every_theme_is_used() {
        let ids: Vec<_> = LESSONS.iter().map(|l| l.id).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(ids, sorted);
        assert_eq!(ids.len(), 36);
        for theme in Theme::ALL {
            assert!(by_theme(theme).next().is_some(), "{theme:?} has no lesson");
        }
        assert_eq!(find("05").map(|l| l.theme), Some(Theme::Release));
        assert!(find("99").is_none());
    }
}
