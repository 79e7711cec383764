//! Lesson prose as prose: the small Markdown the lesson files use —
//! paragraphs, `-`/`*`/`·`/`1.` lists, `` `code` ``, `*emphasis*` and
//! `**strong**` — parsed into blocks (tested natively) and rendered as Yew
//! nodes, never as raw HTML, so a lesson file cannot inject markup.

use yew::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inline {
    Text(String),
    Code(String),
    Em(String),
    Strong(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Block {
    Para(Vec<Inline>),
    List { ordered: bool, items: Vec<Vec<Inline>> },
}

fn is_cjk(c: char) -> bool {
    ('\u{2e80}'..='\u{9fff}').contains(&c)
        || ('\u{ff00}'..='\u{ffef}').contains(&c)
        || ('\u{3000}'..='\u{303f}').contains(&c)
}

/// Lines of one paragraph joined: a space between words, none between
/// Chinese characters (the files wrap Chinese lines too).
fn join_lines(lines: &[&str]) -> String {
    let mut out = String::new();
    for line in lines {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let (Some(a), Some(b)) = (out.chars().last(), line.chars().next()) {
            if !(is_cjk(a) && is_cjk(b)) {
                out.push(' ');
            }
        }
        out.push_str(line);
    }
    out
}

/// A list item's text, if `line` starts one.
fn item(line: &str) -> Option<(bool, &str)> {
    let t = line.trim_start();
    // `·` is how the lessons' narration lists things (a typographic bullet
    // reads better than a dash in the Chinese text as well).
    if let Some(rest) = t
        .strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .or_else(|| t.strip_prefix("· "))
    {
        return Some((false, rest));
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        if let Some(rest) = t[digits..].strip_prefix(". ") {
            return Some((true, rest));
        }
    }
    None
}

pub fn inlines(text: &str) -> Vec<Inline> {
    let mut out = Vec::new();
    let mut plain = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let found = match c {
            '`' => rest[1..]
                .find('`')
                .map(|end| (Inline::Code(rest[1..1 + end].to_owned()), 2 + end)),
            '*' if rest.starts_with("**") => rest[2..]
                .find("**")
                .filter(|&e| e > 0)
                .map(|end| (Inline::Strong(rest[2..2 + end].to_owned()), 4 + end)),
            '*' => rest[1..]
                .find('*')
                .filter(|&e| e > 0 && !rest[1..].starts_with(' '))
                .map(|end| (Inline::Em(rest[1..1 + end].to_owned()), 2 + end)),
            _ => None,
        };
        match found {
            Some((node, len)) => {
                if !plain.is_empty() {
                    out.push(Inline::Text(std::mem::take(&mut plain)));
                }
                out.push(node);
                rest = &rest[len..];
            }
            None => {
                plain.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    if !plain.is_empty() {
        out.push(Inline::Text(plain));
    }
    out
}

pub fn parse(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut para: Vec<&str> = Vec::new();
    let mut list: Option<(bool, Vec<Vec<&str>>)> = None;
    let flush_para = |para: &mut Vec<&str>, blocks: &mut Vec<Block>| {
        if !para.is_empty() {
            blocks.push(Block::Para(inlines(&join_lines(para))));
            para.clear();
        }
    };
    let flush_list = |list: &mut Option<(bool, Vec<Vec<&str>>)>, blocks: &mut Vec<Block>| {
        if let Some((ordered, items)) = list.take() {
            blocks.push(Block::List {
                ordered,
                items: items.iter().map(|i| inlines(&join_lines(i))).collect(),
            });
        }
    };
    for line in text.lines() {
        if line.trim().is_empty() {
            flush_para(&mut para, &mut blocks);
            flush_list(&mut list, &mut blocks);
        } else if let Some((ordered, first)) = item(line) {
            flush_para(&mut para, &mut blocks);
            match &mut list {
                Some((_, items)) => items.push(vec![first]),
                None => list = Some((ordered, vec![vec![first]])),
            }
        } else if let (Some((_, items)), true) = (&mut list, line.starts_with([' ', '\t'])) {
            // A continuation line of the last item is indented; a line
            // that is not starts the paragraph after the list.
            items.last_mut().expect("a list has an item").push(line);
        } else {
            flush_list(&mut list, &mut blocks);
            para.push(line);
        }
    }
    flush_para(&mut para, &mut blocks);
    flush_list(&mut list, &mut blocks);
    blocks
}

fn inline_html(parts: &[Inline]) -> Html {
    parts
        .iter()
        .map(|p| match p {
            Inline::Text(t) => html! { { t.clone() } },
            Inline::Code(t) => html! { <code>{ t.clone() }</code> },
            Inline::Em(t) => html! { <em>{ t.clone() }</em> },
            Inline::Strong(t) => html! { <strong>{ t.clone() }</strong> },
        })
        .collect()
}

/// `text` as paragraphs and lists.
pub fn render(text: &str) -> Html {
    parse(text)
        .iter()
        .map(|b| match b {
            Block::Para(p) => html! { <p>{ inline_html(p) }</p> },
            Block::List { ordered: false, items } => {
                html! { <ul>{ for items.iter().map(|i| html! { <li>{ inline_html(i) }</li> }) }</ul> }
            }
            Block::List { ordered: true, items } => {
                html! { <ol>{ for items.iter().map(|i| html! { <li>{ inline_html(i) }</li> }) }</ol> }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_emphasis_lists_and_chinese_line_joins() {
        let b = parse("Run `SET k v NX` *now*,\nthen **stop**.\n\n- one\n  more\n- two\n\n第一行\n第二行");
        assert_eq!(
            b[0],
            Block::Para(vec![
                Inline::Text("Run ".into()),
                Inline::Code("SET k v NX".into()),
                Inline::Text(" ".into()),
                Inline::Em("now".into()),
                Inline::Text(", then ".into()),
                Inline::Strong("stop".into()),
                Inline::Text(".".into()),
            ])
        );
        assert_eq!(
            b[1],
            Block::List {
                ordered: false,
                items: vec![vec![Inline::Text("one more".into())], vec![Inline::Text("two".into())]]
            }
        );
        assert_eq!(b[2], Block::Para(vec![Inline::Text("第一行第二行".into())]));
        // The narration's `·` bullets, and a paragraph after the list that
        // is not indented (lesson 36's last step).
        let b =
            parse("Defaults:\n· Redisson: 30 s,\n  renewed every 10 s.\n· Redsync: 8 s.\nWhere each is shown: 13, 17.");
        assert_eq!(
            b,
            vec![
                Block::Para(vec![Inline::Text("Defaults:".into())]),
                Block::List {
                    ordered: false,
                    items: vec![
                        vec![Inline::Text("Redisson: 30 s, renewed every 10 s.".into())],
                        vec![Inline::Text("Redsync: 8 s.".into())],
                    ]
                },
                Block::Para(vec![Inline::Text("Where each is shown: 13, 17.".into())]),
            ]
        );
        // A lone star or backtick stays text.
        assert_eq!(inlines("2 * 3 and `x"), vec![Inline::Text("2 * 3 and `x".into())]);
    }
}
