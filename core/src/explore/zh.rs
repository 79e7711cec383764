//! The explorer's text in Chinese (issue 44 item 6): a design's summary,
//! the transcript with its event table, and the result line, for the page
//! in 中文. The English is `Spec::summary` and `Report::transcript`; each
//! function here follows its English twin line by line, with names
//! (clients, nodes, keys, commands and replies) as they are, since they are
//! what a reader types into redis-cli. An event's line is
//! `Event::describe_in`, which holds both languages in one place.

use super::{Outcome, Report, Spec, TopologyKind};
use crate::invariants::Invariant;

/// [`super::explain`] in Chinese.
pub fn explain_zh(i: Invariant) -> &'static str {
    match i {
        Invariant::StaleWrite => "资源在后一个持有者写入之后，又接受了前一个持有者的写入（更新丢失）",
        Invariant::WrongRelease => "一个客户端的释放删掉了另一个客户端拿到的锁",
        Invariant::Deadlock => "持有者已不在，锁却永不过期（或持有超过上限）",
        Invariant::ForeignExtend => "一个客户端的命令延长了另一个客户端拿到的锁（续期时没有校验令牌）",
        Invariant::Overlap => "两个客户端同时认为自己持有锁",
    }
}

fn on_off(b: bool) -> &'static str {
    if b {
        "开"
    } else {
        "关"
    }
}

impl Spec {
    /// [`Spec::summary`] in Chinese: the design's Chinese name (or its
    /// English one), then its parts.
    pub fn summary_zh(&self) -> String {
        let name = match (&self.name_zh, &self.name) {
            (Some(n), _) | (None, Some(n)) => format!("设计「{n}」；"),
            (None, None) => String::new(),
        };
        let kinds = if self.fault_kinds.is_empty() {
            String::new()
        } else {
            let k: Vec<&str> = self.fault_kinds.iter().map(|k| k.name()).collect();
            format!("（{}）", k.join("、"))
        };
        let base = match &self.scenario {
            Some(s) => format!(
                "文件中的场景：拓扑 {}，{} 个客户端（{}），fencing {}，持久化 {}，故障预算 {}，种子 {}",
                s.world.topology.name(),
                s.clients.len(),
                s.clients.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join("、"),
                on_off(s.world.fencing),
                s.world.persistence.name(),
                self.faults,
                self.seed
            ),
            None => format!(
                "拓扑 {}，{} 个客户端，加锁 {}，释放 {}，fencing {}，持久化 {}，故障预算 {}，种子 {}",
                self.topology.name(),
                self.clients,
                if self.topology == TopologyKind::Redlock5 {
                    "redlock（5 个主节点上 SET NX PX）"
                } else {
                    self.acquire.name()
                },
                self.release.name(),
                on_off(self.fencing),
                self.persistence.name(),
                self.faults,
                self.seed
            ),
        };
        format!("{name}{base}{kinds}")
    }
}

impl Report {
    /// [`Report::result_line`] in Chinese.
    pub fn result_line_zh(&self) -> String {
        match &self.outcome {
            Outcome::Violated {
                invariant, seed, steps, ..
            } => format!(
                "结果：违反 {}（{}；种子 {seed}，{steps} 步）",
                invariant.title_zh(),
                invariant.name()
            ),
            Outcome::Held => match (&self.bounded_zh, &self.bounded) {
                (Some(v), _) | (None, Some(v)) => format!("结果：{v}"),
                (None, None) => format!("结果：抽样了 {} 个调度，未发现违反", self.explored),
            },
        }
    }

    /// [`Report::transcript`] in Chinese, ending with the result line.
    pub fn transcript_zh(&self, summary_zh: &str) -> String {
        self.transcript_in(Some(summary_zh))
    }
}
