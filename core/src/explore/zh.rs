//! The explorer's text in Chinese (issue 44 item 6): a design's summary,
//! the transcript with its event table, and the result line, for the page
//! in 中文. The English is `Spec::summary`, `Report::transcript` and
//! `Event::describe`; each function here follows its English twin line by
//! line, with names (clients, nodes, keys, commands and replies) as they
//! are, since they are what a reader types into redis-cli.

use super::{Outcome, Report, Spec, TopologyKind};
use crate::actor::Names;
use crate::invariants::Invariant;
use crate::observe::{LockChange, Via};
use crate::trace::{commands_line, replies_line, Event, EventKind, LossReason};

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

fn via_zh(via: Via) -> &'static str {
    match via {
        Via::Command => "",
        Via::Expiry => "（过期）",
        Via::Replication => "（复制）",
        Via::Restart => "（重启后无数据）",
        Via::FullSync => "（全量同步）",
        Via::Promotion => "（提升为主）",
    }
}

fn loss_zh(r: LossReason) -> &'static str {
    match r {
        LossReason::LinkCut => "链路断开",
        LossReason::NodeDown => "节点宕机",
        LossReason::Dropped => "回复丢失",
    }
}

fn token_zh(t: Option<i64>) -> String {
    t.map_or("无令牌".to_owned(), |t| format!("令牌 {t}"))
}

/// `Event::describe` in Chinese: one line of the transcript's table.
// long: one line of text per EventKind, as its English twin
pub fn describe_zh(e: &Event, names: &Names) -> String {
    let c = |i: u32| names.client(i).to_owned();
    let n = |i: u32| names.node(i).to_owned();
    match &e.kind {
        EventKind::Sent { node, commands, .. } => format!("→ {}：{}", n(*node), commands_line(commands)),
        EventKind::Executed {
            client,
            commands,
            replies,
            ..
        } => {
            let (who, sent, got) = (c(*client), commands_line(commands), replies_line(replies));
            format!("执行 {who} 的 {sent} ⇒ {got}")
        }
        EventKind::Lost {
            client, node, reason, ..
        } => format!("丢失：{} ↔ {}（{}）", c(*client), n(*node), loss_zh(*reason)),
        EventKind::Received { node, replies, .. } => format!("← {}：{}", n(*node), replies_line(replies)),
        EventKind::TimedOut { node, .. } => format!("等待 {} 超时", n(*node)),
        EventKind::Expired { key } => format!("key {key} 过期"),
        EventKind::Lock { key, change, via } => {
            let via = via_zh(*via);
            match change {
                LockChange::Acquired { owner, value, ttl_ms } => format!(
                    "{key} = {value:?}，{} 的锁，{}{via}",
                    owner.map_or("无人".to_owned(), c),
                    ttl_ms.map_or("无 TTL".to_owned(), |ms| format!("PTTL {ms}"))
                ),
                LockChange::Renewed { ttl_ms } => format!(
                    "{key} 续期，{}{via}",
                    ttl_ms.map_or("无 TTL".to_owned(), |ms| format!("PTTL {ms}"))
                ),
                LockChange::Removed { by: Some(b) } => format!("{key} 被 {} 删除{via}", c(*b)),
                LockChange::Removed { by: None } => format!("{key} 消失{via}"),
            }
        }
        EventKind::Replicated { from, offset, commands } => {
            format!("应用 {} 的第 {offset} 批：{}", n(*from), commands_line(commands))
        }
        EventKind::ReplicationLost { from, offset } => format!("没有收到 {} 的第 {offset} 批", n(*from)),
        EventKind::Granted { key, seq } => format!("{key} 的第 {seq} 个持有者（世界视角）"),
        EventKind::Belief { key, holds: true } => format!("认为自己持有 {key}"),
        EventKind::Belief { key, holds: false } => format!("不再认为自己持有 {key}"),
        EventKind::Overlap {
            key,
            clients,
            begin,
            since_ms,
        } => {
            let who = clients.iter().map(|&i| c(i)).collect::<Vec<_>>().join(" 和 ");
            if *begin {
                format!("重叠：{who} 都认为自己持有 {key}")
            } else {
                format!("{key} 上自 {since_ms} ms 起的重叠结束")
            }
        }
        EventKind::WriteSent { token, value } => format!("向资源写入 {value:?}（{}）", token_zh(*token)),
        EventKind::Write {
            client,
            token,
            value,
            accepted,
        } => {
            let verb = if *accepted { "接受" } else { "拒绝" };
            format!("{verb} {} 的写入 {value:?}（{}）", c(*client), token_zh(*token))
        }
        EventKind::Fault { fault } => format!("故障：{}", fault.describe_zh(names)),
        EventKind::Resumed => "恢复运行".to_owned(),
        EventKind::Restarted { kept_data: true } => "重启，数据保留（AOF）".to_owned(),
        EventKind::Restarted { kept_data: false } => "重启，数据为空（无持久化）".to_owned(),
        EventKind::Note { text } => text.clone(),
        EventKind::Elected { term } => format!("当选为 leader（任期 {term}）"),
        EventKind::Done => "程序结束".to_owned(),
        EventKind::Violation { violation: v } => {
            let (title, name) = (v.invariant.title_zh(), v.invariant.name());
            format!("违反 {title}（{name}）[{}–{} ms]", v.from_ms, v.to_ms)
        }
    }
}
