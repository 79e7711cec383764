//! [`ServerMsg`]' `Deserialize`, by hand, as `class::decode` does it for
//! class messages: one flat record of every variant's fields ([`Flat`]),
//! read once, and the `type` picks the variant. The same JSON is read as
//! serde's derive of `#[serde(tag = "type")]` would read it (the test
//! below round-trips every variant), without buffering the message into
//! serde's `Content` and instantiating each nested type's decoder for it.

use serde::{de, Deserialize, Deserializer};

use super::{NodeInfo, Served, ServerMsg};
use crate::actor::Names;
use crate::lesson::run::StepResult;
use crate::trace::Event;

/// Every variant's fields, each optional; `type` says which are needed.
#[derive(Deserialize)]
struct Flat {
    #[serde(rename = "type")]
    kind: String,
    session: Option<String>,
    prefix: Option<String>,
    #[serde(default)]
    topology: Served,
    #[serde(default, rename = "kind")]
    served: Option<Served>,
    #[serde(default)]
    nodes: Vec<NodeInfo>,
    names: Option<Names>,
    event: Option<Event>,
    client: Option<String>,
    text: Option<String>,
    id: Option<String>,
    steps: Option<usize>,
    #[serde(default)]
    server_version: String,
    #[serde(default)]
    factor: u64,
    notice: Option<String>,
    result: Option<StepResult>,
    note: Option<String>,
    passed: Option<bool>,
    message: Option<String>,
}

fn need<T>(v: Option<T>, field: &'static str) -> Result<T, &'static str> {
    v.ok_or(field)
}

impl Flat {
    /// The variant `kind` names; `Err` names a field it lacks.
    fn into_msg(self) -> Result<ServerMsg, &'static str> {
        let f = self;
        Ok(match f.kind.as_str() {
            "hello" => ServerMsg::Hello {
                session: need(f.session, "session")?,
                prefix: need(f.prefix, "prefix")?,
                topology: f.topology,
                nodes: f.nodes,
                names: need(f.names, "names")?,
            },
            "event" => ServerMsg::Event {
                event: need(f.event, "event")?,
            },
            "reply" => ServerMsg::Reply {
                client: need(f.client, "client")?,
                text: need(f.text, "text")?,
            },
            "names" => ServerMsg::Names {
                names: need(f.names, "names")?,
            },
            "topology" => ServerMsg::Topology {
                kind: need(f.served, "kind")?,
                nodes: f.nodes,
            },
            "lesson" => ServerMsg::Lesson {
                id: need(f.id, "id")?,
                steps: need(f.steps, "steps")?,
                server_version: f.server_version,
                factor: f.factor,
                topology: f.topology,
                nodes: f.nodes,
                names: need(f.names, "names")?,
                notice: f.notice,
            },
            "step" => ServerMsg::Step {
                result: need(f.result, "result")?,
                note: f.note,
            },
            "lesson_done" => ServerMsg::LessonDone {
                passed: need(f.passed, "passed")?,
            },
            "error" => ServerMsg::Error {
                message: need(f.message, "message")?,
            },
            // A newer backend's message: ignored.
            _ => ServerMsg::Unknown,
        })
    }
}

impl<'de> Deserialize<'de> for ServerMsg {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Flat::deserialize(d)?.into_msg().map_err(de::Error::missing_field)
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::lesson::run::StepResult;

    /// Every variant comes back as it was written, and one lacking a
    /// field it needs is an error.
    #[test]
    fn every_message_round_trips_and_a_bad_one_is_refused() {
        let names = Names::default();
        let result = StepResult {
            index: 2,
            actor: Some("A".into()),
            shown: "SET k v".into(),
            reply: Some("OK".into()),
            expected: None,
            ok: true,
            at_ms: 30,
            trace_len: 4,
            metrics: None,
        };
        let all = vec![
            ServerMsg::Hello {
                session: "s".into(),
                prefix: "lab:s:".into(),
                topology: Served::External,
                nodes: vec![NodeInfo::default()],
                names: names.clone(),
            },
            ServerMsg::Reply {
                client: "A".into(),
                text: "OK".into(),
            },
            ServerMsg::Names { names: names.clone() },
            ServerMsg::Topology {
                kind: Served::External,
                nodes: Vec::new(),
            },
            ServerMsg::Lesson {
                id: "05".into(),
                steps: 9,
                server_version: "7.0.15".into(),
                factor: 100,
                topology: Served::External,
                nodes: Vec::new(),
                names,
                notice: Some("DELEX needs Redis 8.4".into()),
            },
            ServerMsg::Step {
                result,
                note: Some("PX 150".into()),
            },
            ServerMsg::LessonDone { passed: true },
            ServerMsg::Error { message: "no".into() },
            ServerMsg::Unknown,
        ];
        for m in all {
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(serde_json::from_str::<ServerMsg>(&json).unwrap(), m, "{json}");
        }
        for bad in [
            r#"{"type":"reply","client":"A"}"#,
            r#"{"type":"topology"}"#,
            r#"{"text":"x"}"#,
        ] {
            assert!(serde_json::from_str::<ServerMsg>(bad).is_err(), "{bad}");
        }
    }
}
