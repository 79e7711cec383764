//! [`ServerSays`]' `Deserialize`, by hand: the message is read once as a
//! flat record of every variant's fields ([`Flat`]), and the `type` picks
//! the variant and the fields it needs. The same JSON is read as serde's
//! derive of `#[serde(tag = "type")]` would read it (the round-trip test
//! below checks every variant), but the derive buffers the message into
//! serde's `Content` and instantiates each nested type's decoder for it
//! too: it was the page's largest function (35 KB raw). Two fields have one
//! name and two shapes (`question` and `drill`: a number in `answered` and
//! `drill_tally`, an object elsewhere), read by [`NumOr`].

use std::marker::PhantomData;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::{ClassCode, Drill, Member, Position, Question, ServerSays, Summary, Tally};
use crate::trace::Event;

/// A number, or an object of type `T`.
enum NumOr<T> {
    Num(u32),
    It(T),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for NumOr<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = NumOr<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number or an object")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
                u32::try_from(n).map(NumOr::Num).map_err(E::custom)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(NumOr::It)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// Every variant's fields, each optional; `type` says which are needed.
#[derive(Deserialize)]
struct Flat {
    #[serde(rename = "type")]
    kind: String,
    id: Option<String>,
    code: Option<ClassCode>,
    secret: Option<String>,
    join_url: Option<String>,
    #[serde(default)]
    qr_svg: String,
    member: Option<String>,
    name: Option<String>,
    position: Option<Position>,
    question: Option<NumOr<Question>>,
    drill: Option<NumOr<Drill>>,
    score: Option<u32>,
    since: Option<String>,
    tally: Option<Tally>,
    #[serde(default)]
    names: Vec<String>,
    right_choice: Option<usize>,
    right: Option<bool>,
    found: Option<Vec<String>>,
    reported: Option<u32>,
    of: Option<u32>,
    events: Option<Vec<Event>>,
    urls: Option<Vec<String>>,
    members: Option<Vec<Member>>,
    summary: Option<Summary>,
    message: Option<String>,
}

fn need<T>(v: Option<T>, field: &'static str) -> Result<T, &'static str> {
    v.ok_or(field)
}

fn object<T>(v: Option<NumOr<T>>, field: &'static str) -> Result<Option<T>, &'static str> {
    match v {
        None => Ok(None),
        Some(NumOr::It(t)) => Ok(Some(t)),
        Some(NumOr::Num(_)) => Err(field),
    }
}

fn number<T>(v: Option<NumOr<T>>, field: &'static str) -> Result<u32, &'static str> {
    match v {
        Some(NumOr::Num(n)) => Ok(n),
        _ => Err(field),
    }
}

impl Flat {
    /// The variant `kind` names; `Err` names a field it lacks (or has in
    /// the wrong shape).
    // long: one arm per message, as the derive would have it
    fn into_says(self) -> Result<ServerSays, &'static str> {
        let f = self;
        Ok(match f.kind.as_str() {
            "started" => ServerSays::Started {
                code: need(f.code, "code")?,
                secret: need(f.secret, "secret")?,
                join_url: need(f.join_url, "join_url")?,
                qr_svg: f.qr_svg,
            },
            "joined" => ServerSays::Joined {
                member: need(f.member, "member")?,
                name: f.name,
                position: need(f.position, "position")?,
                question: object(f.question, "question")?,
                drill: object(f.drill, "drill")?,
                score: need(f.score, "score")?,
                since: need(f.since, "since")?,
            },
            "moved" => ServerSays::Moved {
                id: need(f.id, "id")?,
                position: need(f.position, "position")?,
            },
            "asked" => ServerSays::Asked {
                id: need(f.id, "id")?,
                question: need(object(f.question, "question")?, "question")?,
            },
            "tally" => ServerSays::Tally {
                tally: need(f.tally, "tally")?,
                names: f.names,
            },
            "revealed" => ServerSays::Revealed {
                id: need(f.id, "id")?,
                tally: need(f.tally, "tally")?,
                right_choice: f.right_choice,
            },
            "answered" => ServerSays::Answered {
                question: number(f.question, "question")?,
                right: f.right,
                score: need(f.score, "score")?,
            },
            "drill_asked" => ServerSays::DrillAsked {
                id: need(f.id, "id")?,
                drill: need(object(f.drill, "drill")?, "drill")?,
            },
            "drill_tally" => ServerSays::DrillTally {
                drill: number(f.drill, "drill")?,
                found: need(f.found, "found")?,
                reported: need(f.reported, "reported")?,
                of: need(f.of, "of")?,
            },
            "live" => ServerSays::Live {
                id: need(f.id, "id")?,
                events: need(f.events, "events")?,
            },
            "instances" => ServerSays::Instances {
                urls: need(f.urls, "urls")?,
            },
            "roster" => ServerSays::Roster {
                members: need(f.members, "members")?,
            },
            "ended" => ServerSays::Ended {
                summary: need(f.summary, "summary")?,
            },
            "error" => ServerSays::Error {
                message: need(f.message, "message")?,
            },
            // A newer server's message: ignored.
            _ => ServerSays::Unknown,
        })
    }
}

impl<'de> Deserialize<'de> for ServerSays {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Flat::deserialize(d)?.into_says().map_err(de::Error::missing_field)
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;

    /// Every variant comes back as it was written (with the fields each
    /// may lack defaulted), and a wrong or missing field is an error.
    // long: one value of every variant
    #[test]
    fn every_message_round_trips_and_a_bad_one_is_refused() {
        let position = Position {
            lesson: Some("05".into()),
            step: 2,
            seed: Some(9),
            driver: ClassDriver::Real,
            dark: true,
        };
        let question = Question {
            id: 3,
            lesson: "05".into(),
            step: 1,
            choices: 3,
        };
        let tally = Tally {
            question: 3,
            counts: vec![1, 2, 0],
            answered: 3,
            of: 4,
            right: 2,
        };
        let drill = Drill {
            id: 2,
            design: "01-bare-del".into(),
        };
        let member = Member {
            member: "m1".into(),
            name: Some("Ada".into()),
            score: 1,
            connected: true,
        };
        let all = vec![
            ServerSays::Started {
                code: ClassCode::parse("ABC234").unwrap(),
                secret: "s".into(),
                join_url: "http://x/?class=ABC234".into(),
                qr_svg: "<svg/>".into(),
            },
            ServerSays::Joined {
                member: "m1".into(),
                name: None,
                position: position.clone(),
                question: Some(question.clone()),
                drill: Some(drill.clone()),
                score: 4,
                since: "7".into(),
            },
            ServerSays::Joined {
                member: "m1".into(),
                name: Some("Ada".into()),
                position: Position::default(),
                question: None,
                drill: None,
                score: 0,
                since: "0".into(),
            },
            ServerSays::Moved {
                id: "8".into(),
                position,
            },
            ServerSays::Asked {
                id: "9".into(),
                question,
            },
            ServerSays::Tally {
                tally: tally.clone(),
                names: vec!["Ada".into()],
            },
            ServerSays::Revealed {
                id: "10".into(),
                tally: tally.clone(),
                right_choice: Some(1),
            },
            ServerSays::Answered {
                question: 3,
                right: Some(false),
                score: 2,
            },
            ServerSays::DrillAsked { id: "11".into(), drill },
            ServerSays::DrillTally {
                drill: 2,
                found: vec!["Ada".into()],
                reported: 2,
                of: 3,
            },
            ServerSays::Live {
                id: "12".into(),
                events: Vec::new(),
            },
            ServerSays::Instances {
                urls: vec!["http://a/".into(), "http://b/".into()],
            },
            ServerSays::Roster {
                members: vec![member.clone()],
            },
            ServerSays::Ended {
                summary: Summary {
                    code: "ABC234".into(),
                    questions: vec![QuestionSummary {
                        question: Question {
                            id: 1,
                            lesson: "01".into(),
                            step: 0,
                            choices: 0,
                        },
                        tally,
                    }],
                    members: vec![member],
                },
            },
            ServerSays::Error { message: "no".into() },
            ServerSays::Unknown,
        ];
        for m in all {
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(serde_json::from_str::<ServerSays>(&json).unwrap(), m, "{json}");
        }
        let refused = [
            r#"{"type":"moved","id":"1"}"#,
            r#"{"type":"answered","question":{"id":1},"score":0}"#,
            r#"{"type":"asked","id":"1","question":3}"#,
            r#"{"type":"drill_tally","drill":-1,"found":[],"reported":0,"of":0}"#,
            r#"{"id":"1"}"#,
            r#"[1]"#,
        ];
        for bad in refused {
            assert!(serde_json::from_str::<ServerSays>(bad).is_err(), "{bad}");
        }
        assert_eq!(
            serde_json::from_str::<ServerSays>(r#"{"type":"future","whatever":[1]}"#).unwrap(),
            ServerSays::Unknown
        );
    }
}
