//! The search's bounds and verdict as sentences, in English and Chinese:
//! "held" is only ever said with the bounds it holds within.

use super::{Bfs, SearchStatus};
use crate::explore::FaultKind;

impl Bfs {
    /// What the search bounded: "every schedule of 2 clients with at most 1
    /// fault from {pause, crash}, …".
    pub fn bounds(&self) -> String {
        self.bounds_in(false)
    }

    /// [`Bfs::bounds`] in Chinese.
    pub fn bounds_zh(&self) -> String {
        self.bounds_in(true)
    }

    fn bounds_in(&self, zh: bool) -> String {
        let kinds: Vec<&str> = FaultKind::ALL
            .into_iter()
            .filter(|k| self.options.iter().any(|f| FaultKind::of(f) == Some(*k)))
            .map(FaultKind::name)
            .collect();
        let seeds = match (self.seeds.as_slice(), zh) {
            ([one], false) => format!("world seed {one}"),
            ([one], true) => format!("世界种子 {one}"),
            (many, _) => format!(
                "{} {}..={}",
                if zh { "世界种子" } else { "world seeds" },
                many.first().copied().unwrap_or(0),
                many.last().copied().unwrap_or(0)
            ),
        };
        let pauses = self.reductions.pause_at_input && kinds.contains(&FaultKind::Pause.name());
        let (clients, budget, options) = (self.base.clients.len(), self.budget, self.options.len());
        let (kinds, steps) = (kinds.join(", "), self.spec.max_steps);
        let alike = match (self.symmetric_model, zh) {
            (false, _) => "",
            (true, false) => " (alike: one start time, one random stream shape)",
            (true, true) => "（彼此相同：同一启动时间、同一随机流形状）",
        };
        let at_input = match (pauses, zh) {
            (false, _) => "",
            (true, false) => " (a pause begins as an input reaches its client)",
            (true, true) => "（暂停在输入到达其客户端时开始）",
        };
        if zh {
            format!(
                "{clients} 个客户端{alike}、至多 {budget} 个故障（取自 {{{kinds}}}，{options} 种故障选项）落在任意位置{at_input}的每一个调度，网络延迟按{seeds}抽取，每次运行至多 {steps} 步"
            )
        } else {
            format!(
                "every schedule of {clients} clients{alike} with at most {budget} fault(s) from {{{kinds}}} ({options} fault options) at any point{at_input}, network delays as {seeds} draws them, runs of at most {steps} steps"
            )
        }
    }

    /// The verdict as one line, its bounds stated.
    pub fn verdict(&self) -> String {
        self.verdict_in(false)
    }

    /// [`Bfs::verdict`] in Chinese.
    pub fn verdict_zh(&self) -> String {
        self.verdict_in(true)
    }

    fn verdict_in(&self, zh: bool) -> String {
        let s = self.stats();
        let (states, frontier, depth) = (s.states, s.frontier, s.depth);
        let bounds = self.bounds_in(zh);
        let tails = match (s.tail_states, zh) {
            (0, _) => String::new(),
            (n, false) => format!("{n} more states checked along deterministic tails, "),
            (n, true) => format!("另有 {n} 个状态在确定性尾段上检查，"),
        };
        match (self.status, zh) {
            (SearchStatus::Exhausted, false) => format!("held: {bounds}; {tails}{states} distinct states"),
            (SearchStatus::Exhausted, true) => format!("成立：{bounds}；{tails}{states} 个不同状态"),
            (SearchStatus::Violated { invariant, .. }, false) => format!(
                "violated {}: a shortest counterexample within {bounds}; found after {states} distinct states",
                invariant.name()
            ),
            (SearchStatus::Violated { invariant, .. }, true) => format!(
                "违反 {}：{bounds} 内的一个最短反例；在 {states} 个不同状态后找到",
                invariant.name()
            ),
            (SearchStatus::NotExhausted, false) if self.stopped.is_some() => {
                let (role, reply) = self.stopped.as_ref().map_or(("lock", ""), |(r, t)| (*r, t.as_str()));
                format!(
                    "not exhausted: on one schedule the {role} script was stopped ({reply}); explored {states} states (depth {depth}); no verdict on {bounds}"
                )
            }
            (SearchStatus::NotExhausted, true) if self.stopped.is_some() => {
                let (role, reply) = self.stopped.as_ref().map_or(("lock", ""), |(r, t)| (*r, t.as_str()));
                format!(
                    "未穷尽：在某个调度上 {role} 脚本被模拟器停止（{reply}）；探索了 {states} 个状态（深度 {depth}）；对 {bounds} 不下结论"
                )
            }
            (SearchStatus::NotExhausted | SearchStatus::Running, false) => format!(
                "not exhausted within the limit: explored {states} states, the frontier was {frontier} (depth {depth}); no verdict on {bounds}"
            ),
            (SearchStatus::NotExhausted | SearchStatus::Running, true) => format!(
                "在上限内未穷尽：探索了 {states} 个状态，前沿为 {frontier}（深度 {depth}）；对 {bounds} 不下结论"
            ),
        }
    }
}
