//! `locklab lesson list | show ID | run ID`: the catalogue in a terminal.

use std::path::PathBuf;

use std::io::{BufRead, Write};

use locklab_core::client::{Program, RedlockProgram};
use locklab_core::explore::exercise::grade;
use locklab_core::lesson::exercise::{Exercise, MAX_ANSWER};
use locklab_core::lesson::render::{self, swimlane_in, transcript};
use locklab_core::lesson::rounds;
use locklab_core::lesson::run::LessonRun;
use locklab_core::lesson::{builtin, catalogue, Lang, Lesson, LessonError, Quiz, Step, Timed};

use crate::userfile;

/// Where lessons come from: the files built into the binary, or a directory
/// (to try a lesson being written without rebuilding). Each `.toml` file
/// is read through [`userfile::read`] (regular files of at most
/// [`userfile::LESSON`]'s size), and all of them together hold at most
/// [`userfile::LESSON_DIR_MAX`] bytes.
pub fn load(dir: Option<&PathBuf>) -> Result<Vec<Lesson>, LessonError> {
    let Some(dir) = dir else { return builtin() };
    let mut files = Vec::new();
    let mut total = 0u64;
    let entries = std::fs::read_dir(dir).map_err(|e| LessonError::Parse(format!("{}: {e}", dir.display())))?;
    for e in entries.filter_map(|e| e.ok()) {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "toml") {
            let text = userfile::read(&p, userfile::LESSON).map_err(|e| LessonError::Parse(e.to_string()))?;
            total += text.len() as u64;
            if total > userfile::LESSON_DIR_MAX {
                return Err(LessonError::Parse(format!(
                    "{}: its lesson files hold more than {} bytes together (the catalogue's take 0.5 MB)",
                    dir.display(),
                    userfile::LESSON_DIR_MAX
                )));
            }
            files.push((p.display().to_string(), text));
        }
    }
    let refs: Vec<(&str, &str)> = files.iter().map(|(n, t)| (n.as_str(), t.as_str())).collect();
    catalogue(&refs)
}

/// One lesson a line: id, theme, title, source.
pub fn list(lessons: &[Lesson], lang: Lang) -> String {
    lessons
        .iter()
        .map(|l| {
            format!(
                "{}  {:<11} {}  [{} §{}]\n",
                l.id,
                format!("{:?}", l.theme).to_lowercase(),
                l.title.get(lang),
                l.source.seed,
                l.source.section
            )
        })
        .collect()
}

/// The lesson's narration, its timed answer (question and rubric) if it
/// has one, and its steps, without running them: what each step does (in
/// `lang`), its expected reply, its quiz with choices and answer, and for a
/// Redlock program the parameters its decision depends on.
pub fn show(lesson: &Lesson, lang: Lang) -> String {
    let zh = lang == Lang::Zh;
    let mut out = if zh {
        format!(
            "第 {} 课 — {}\n\n{}\n",
            lesson.id,
            lesson.title.zh,
            lesson.narration.zh.trim()
        )
    } else {
        format!(
            "lesson {} — {}\n\n{}\n",
            lesson.id,
            lesson.title.en,
            lesson.narration.en.trim()
        )
    };
    let topology = format!("{:?}", lesson.topology).to_lowercase();
    if zh {
        out.push_str(&format!("\n角色：{}   拓扑：{topology}\n\n", lesson.actors.join("、")));
    } else {
        out.push_str(&format!(
            "\nactors: {}   topology: {topology}\n\n",
            lesson.actors.join(", ")
        ));
    }
    if let Some(t) = &lesson.timed {
        out.push_str(&timed_lines(t, lang));
    }
    let run = match LessonRun::new(lesson) {
        Ok(run) => run,
        Err(e) => return format!("{out}{e}\n"),
    };
    let names = run.world().names();
    for (i, s) in lesson.steps.iter().enumerate() {
        let what = run.shown(i).map(|sh| sh.text(names, lang)).unwrap_or_default();
        let who = s.client.as_deref().map(|c| format!("{c}: ")).unwrap_or_default();
        let node = s.node.map(|n| format!("@{} ", names.node(n))).unwrap_or_default();
        out.push_str(&format!("{:>3}. {who}{node}{what}\n", i + 1));
        if let Some(Program::Redlock(r)) = &s.program {
            out.push_str(&format!("     {}\n", redlock_params(r, run.world().node_count(), lang)));
        }
        if let Some(e) = &s.expect {
            let label = if zh { "期望" } else { "expect" };
            out.push_str(&format!("     {label}: {}\n", e.describe()));
        }
        if let Some(q) = &s.quiz {
            for l in render::quiz_lines(s, q, lang) {
                out.push_str(&format!("     {l}\n"));
            }
        }
    }
    out
}

/// A timed answer as `show` prints it (the page and `--quiz` ask it
/// before the first step): the question, the clock, the rubric.
fn timed_lines(t: &Timed, lang: Lang) -> String {
    let mut out = match lang {
        Lang::En => format!(
            "⏲ timed answer ({} s): {}\n  rubric:\n",
            t.seconds,
            t.question.en.trim()
        ),
        Lang::Zh => format!(
            "⏲ 限时回答（{} 秒）：{}\n  评分要点：\n",
            t.seconds,
            t.question.zh.trim()
        ),
    };
    for (n, p) in t.rubric.iter().enumerate() {
        out.push_str(&format!("  {:>2}. {}\n", n + 1, p.get(lang).trim()));
    }
    out.push('\n');
    out
}

/// A Redlock program's parameters and the arithmetic it decides by
/// (redis.io, "Distributed Locks with Redis": drift = TTL × 1 % + 2 ms).
fn redlock_params(r: &RedlockProgram, world_nodes: u32, lang: Lang) -> String {
    let n = if r.nodes.is_empty() {
        world_nodes
    } else {
        r.nodes.len() as u32
    };
    let drift = rounds::drift_ms(r.ttl_ms);
    match lang {
        Lang::En => format!(
            "{n} masters, per-node timeout {} ms, majority {} of {n}; drift = {} × 1 % + 2 = {drift} ms; validity = {} − elapsed − {drift} ms",
            r.per_node_timeout_ms,
            n / 2 + 1,
            r.ttl_ms,
            r.ttl_ms
        ),
        Lang::Zh => format!(
            "{n} 个 master，每节点超时 {} ms，多数派 {n} 中至少 {} 个；漂移余量 = {} × 1 % + 2 = {drift} ms；有效时间 = {} − 耗时 − {drift} ms",
            r.per_node_timeout_ms,
            n / 2 + 1,
            r.ttl_ms,
            r.ttl_ms
        ),
    }
}

/// Run a lesson to the end (or to step `upto`); the transcript and the
/// swimlane, and whether every expectation and the outcome held.
pub fn run(lesson: &Lesson, lang: Lang, upto: Option<usize>, seed: Option<u64>) -> Result<(String, bool), LessonError> {
    let seed = seed.unwrap_or(lesson.seed);
    let n = upto.unwrap_or(lesson.len()).min(lesson.len());
    let run = LessonRun::at_step(lesson, seed, n)?;
    let mut out = transcript(&run, lang);
    out.push('\n');
    out.push_str(&swimlane_in(&run, 72, lang));
    let ok = run.results().iter().all(|r| r.ok) && (n < lesson.len() || run.outcome().ok);
    Ok((out, ok))
}

/// Does `guess` answer the quiz before `step`? A choice may be given by
/// its number as shown (`order`: the shown slots' indices into `choices`,
/// [`Quiz::choice_order`]) or its text (in either language); a free answer
/// is compared with the expected reply as redis-cli prints it.
pub fn is_right(step: &Step, q: &Quiz, order: &[usize], guess: &str) -> bool {
    let guess = guess.trim();
    let right_en = render::quiz_answer(step, q, Lang::En);
    let right_zh = render::quiz_answer(step, q, Lang::Zh);
    if !q.choices.is_empty() {
        let picked = guess
            .parse::<usize>()
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|slot| order.get(slot).copied())
            .and_then(|i| {
                q.choices
                    .get(i)
                    .map(|en| (en.clone(), q.choices_in(Lang::Zh)[i].to_owned()))
            });
        if let Some((en, zh)) = picked {
            return en == right_en || zh == right_zh;
        }
    }
    if guess == right_en || guess == right_zh {
        return true;
    }
    step.expect.as_ref().is_some_and(|e| e.matches(guess))
}

/// `lesson run ID --quiz`: before each step that asks something (a quiz,
/// or a command whose reply the article states), ask on `output`, read one
/// line from `input`, say whether it was right, then play the step. Ends
/// with the transcript's outcome and the score. The choices come in the
/// order `seed` shuffles them to ([`Quiz::choice_order`], as the page's
/// interview mode), so the slot of the answer in the file says nothing.
pub fn quiz(
    lesson: &Lesson,
    lang: Lang,
    seed: u64,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> Result<(u32, u32), LessonError> {
    let mut run = LessonRun::new(lesson)?;
    let (mut right, mut asked) = (0, 0);
    let io = |e: std::io::Error| LessonError::Parse(format!("terminal: {e}"));
    let zh = lang == Lang::Zh;
    writeln!(output, "{}", if zh { &lesson.title.zh } else { &lesson.title.en }).map_err(io)?;
    if zh {
        writeln!(
            output,
            "（选项顺序由种子 {seed} 打乱；--seed {seed} 可按同样顺序再问一次）\n"
        )
        .map_err(io)?;
    } else {
        writeln!(
            output,
            "(choices shuffled with seed {seed}; --seed {seed} asks in this order again)\n"
        )
        .map_err(io)?;
    }
    if let Some(t) = &lesson.timed {
        let (ticked, points) = timed_answer(t, lang, input, output).map_err(io)?;
        right += ticked;
        asked += points;
    }
    while !run.is_finished() {
        let i = run.position();
        let step = lesson.steps[i].clone();
        let question = step_question(&step, lang);
        if let Some(ex) = &step.exercise {
            asked += 1;
            if exercise(ex, lang, input, output)? {
                right += 1;
            }
        }
        if let Some((text, q)) = question {
            asked += 1;
            writeln!(output, "{} {}", if zh { "？" } else { "?" }, text.trim()).map_err(io)?;
            let order = q.choice_order(seed, i);
            let shown = q.choices_in(lang);
            for (n, &c) in order.iter().enumerate() {
                writeln!(output, "  {}. {}", n + 1, shown[c]).map_err(io)?;
            }
            write!(output, "{}", if zh { "你的答案> " } else { "your answer> " }).map_err(io)?;
            output.flush().map_err(io)?;
            let mut line = String::new();
            input.read_line(&mut line).map_err(io)?;
            let answer = render::quiz_answer(&step, &q, lang);
            if is_right(&step, &q, &q.choice_order(seed, i), &line) {
                right += 1;
                writeln!(output, "✓ {}", if zh { "答对了" } else { "right" }).map_err(io)?;
            } else {
                writeln!(output, "✗ {}{answer}", if zh { "答案是：" } else { "the answer is: " }).map_err(io)?;
            }
        }
        run.step()?;
        let before = render::transcript_lines(&run, lang);
        let last: Vec<&str> = step_block(&before);
        for l in last {
            writeln!(output, "{l}").map_err(io)?;
        }
        writeln!(output).map_err(io)?;
    }
    for l in render::outcome_lines(&run, lang) {
        writeln!(output, "{l}").map_err(io)?;
    }
    if zh {
        writeln!(output, "\n得分：{right} / {asked}").map_err(io)?;
    } else {
        writeln!(output, "\nscore: {right} / {asked}").map_err(io)?;
    }
    Ok((right, asked))
}

/// What `--quiz` asks before a step: its quiz, or, for a command whose
/// reply the article states, "what is the reply?" (judged against
/// `expect`, so the quiz it returns has no choices).
fn step_question(step: &Step, lang: Lang) -> Option<(String, Quiz)> {
    let zh = lang == Lang::Zh;
    match (&step.quiz, &step.cmd, &step.expect) {
        (Some(q), ..) => Some((q.question(lang).to_owned(), q.clone())),
        (None, Some(cmd), Some(_)) => Some((
            if zh {
                format!("{} 执行 {cmd}，回复是什么？", step.client.as_deref().unwrap_or("?"))
            } else {
                format!(
                    "{} runs {cmd}. What is the reply?",
                    step.client.as_deref().unwrap_or("?")
                )
            },
            Quiz {
                zh: String::new(),
                en: String::new(),
                choices: Vec::new(),
                choices_zh: Vec::new(),
                answer: None,
                answer_zh: None,
            },
        )),
        _ => None,
    }
}

/// Ask an exercise, read the answer — one line; or, when the first line
/// is blank, starts a Lua script or is `MULTI`, every line up to one
/// holding only `.` — and print the lab's verdict. `true` when it passed.
fn exercise(ex: &Exercise, lang: Lang, input: &mut dyn BufRead, output: &mut dyn Write) -> Result<bool, LessonError> {
    let io = |e: std::io::Error| LessonError::Parse(format!("terminal: {e}"));
    let zh = lang == Lang::Zh;
    writeln!(output, "✎ {}", ex.ask.get(lang).trim()).map_err(io)?;
    writeln!(
        output,
        "{}",
        if zh {
            "  （一行命令直接回车；多行——Lua 脚本，或每行一条命令——先输入一个空行或直接开始脚本，以单独一行 . 结束）"
        } else {
            "  (one command line, then Enter; several lines — a Lua script, or commands one a line — start with an empty line or the script itself and end with a line holding only .)"
        }
    )
    .map_err(io)?;
    write!(output, "{}", if zh { "你的答案> " } else { "your answer> " }).map_err(io)?;
    output.flush().map_err(io)?;
    let answer = read_answer(input).map_err(io)?;
    let verdict = match grade(ex, &answer) {
        Ok(g) => {
            for l in g.lines(lang) {
                writeln!(output, "{l}").map_err(io)?;
            }
            g.passed
        }
        Err(e) => {
            writeln!(output, "✗ {}{e}", if zh { "无法评判：" } else { "cannot grade it: " }).map_err(io)?;
            false
        }
    };
    writeln!(
        output,
        "{}\n{}",
        if zh { "参考答案：" } else { "a model answer:" },
        ex.model.trim()
    )
    .map_err(io)?;
    Ok(verdict)
}

/// Read an exercise's answer (see [`exercise`]), at most
/// [`MAX_ANSWER`]` + 1` bytes of it: longer is refused by the grader.
fn read_answer(input: &mut dyn BufRead) -> std::io::Result<String> {
    let mut first = String::new();
    input.read_line(&mut first)?;
    let head = first.trim();
    let many = head.is_empty()
        || head.eq_ignore_ascii_case("MULTI")
        || head.contains("redis.")
        || ["if", "local", "return", "--", "for", "while"]
            .iter()
            .any(|w| head.split_whitespace().next() == Some(w));
    if !many {
        return Ok(first);
    }
    let mut answer = first;
    loop {
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 || line.trim_end_matches(['\r', '\n']) == "." {
            break;
        }
        answer.push_str(&line);
        if answer.len() > MAX_ANSWER {
            break;
        }
    }
    Ok(answer)
}

/// A lesson's timed answer on a terminal: the question and the time it
/// allows (no clock: the candidate keeps time), one line of answer, then
/// the rubric, scored by the points the candidate names by number (each
/// counted once; anything else ignored). Returns (points made, points).
fn timed_answer(t: &Timed, lang: Lang, input: &mut dyn BufRead, output: &mut dyn Write) -> std::io::Result<(u32, u32)> {
    let zh = lang == Lang::Zh;
    writeln!(
        output,
        "{} {}",
        if zh { "？" } else { "?" },
        t.question.get(lang).trim()
    )?;
    if zh {
        write!(output, "（限时 {} 秒）你的回答，一行> ", t.seconds)?;
    } else {
        write!(output, "({} seconds) your answer, on one line> ", t.seconds)?;
    }
    output.flush()?;
    let mut line = String::new();
    input.read_line(&mut line)?;
    writeln!(output, "{}", if zh { "评分要点：" } else { "the rubric:" })?;
    for (n, p) in t.rubric.iter().enumerate() {
        writeln!(output, "  {}. {}", n + 1, p.get(lang))?;
    }
    if zh {
        write!(output, "你的回答讲到了哪几点？填编号，空格分隔> ")?;
    } else {
        write!(
            output,
            "which points did your answer make? their numbers, space-separated> "
        )?;
    }
    output.flush()?;
    let mut line = String::new();
    input.read_line(&mut line)?;
    let made: std::collections::BTreeSet<usize> = (line.split(|c: char| !c.is_ascii_digit()))
        .filter_map(|n| n.parse::<usize>().ok())
        .filter(|n| (1..=t.rubric.len()).contains(n))
        .collect();
    let (made, points) = (made.len() as u32, t.rubric.len() as u32);
    if zh {
        writeln!(output, "要点：{made} / {points}\n")?;
    } else {
        writeln!(output, "points: {made} / {points}\n")?;
    }
    Ok((made, points))
}

/// The lines of the last step in a transcript: from its `[   … ms]` line
/// to the next blank line (the quiz before it was just asked).
fn step_block(lines: &[render::Line]) -> Vec<&str> {
    let body: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
    let start = body.iter().rposition(|l| l.starts_with('[')).unwrap_or(0);
    let end = body[start..]
        .iter()
        .position(|l| l.is_empty())
        .map_or(body.len(), |p| start + p);
    body[start..end].to_vec()
}

/// The trainer's notes (`lesson show --notes`), after a rule; a lesson
/// without any says so.
pub fn show_notes(lesson: &Lesson, lang: Lang) -> String {
    let head = match lang {
        Lang::Zh => "讲师备注",
        Lang::En => "trainer's notes",
    };
    let body = match lesson.notes() {
        Some(n) => n.render(lang),
        None => match lang {
            Lang::Zh => "（本课没有备注）\n".to_owned(),
            Lang::En => "(this lesson has none)\n".to_owned(),
        },
    };
    format!("\n── {head} ──\n{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lesson(id: &str) -> Lesson {
        builtin().unwrap().into_iter().find(|l| l.id == id).unwrap()
    }

    /// `lesson show` lists each step in words, with its quiz, its choices
    /// and its answer, and a Redlock program's arithmetic.
    #[test]
    fn a_timed_answer_prints_its_rubric_and_scores_the_points_named() {
        let l = lesson("35");
        let t = l.timed.as_ref().expect("lesson 35 opens with a timed answer");
        let asked = (l.steps.iter())
            .filter(|s| s.quiz.is_some() || (s.cmd.is_some() && s.expect.is_some()))
            .count();
        // Points 1 and 2 (9 is no point, the second 2 counts once), then
        // every question answered wrong.
        let mut input = std::io::Cursor::new(format!(
            "SET NX PX and a Lua release\n1, 2 9 2\n{}",
            "x\n".repeat(asked)
        ));
        let mut out = Vec::new();
        let (right, n) = quiz(&l, Lang::En, 7, &mut input, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("(60 seconds) your answer") && text.contains("the rubric:"),
            "{text}"
        );
        assert!(text.contains(&format!("  8. {}", t.rubric[7].en)), "{text}");
        assert!(text.contains("points: 2 / 8"), "{text}");
        assert_eq!((right, n as usize), (2, asked + 8), "{text}");
    }

    #[test]
    fn show_prints_quizzes_and_redlock_parameters() {
        let en = show(&lesson("17"), Lang::En);
        assert!(en.contains("? quiz: "), "{en}");
        assert!(
            en.contains("choices: 0/5 | 2/5 | 3/5 | 5/5") && en.contains("answer: 0/5"),
            "{en}"
        );
        assert!(
            en.contains("5 masters, per-node timeout 50 ms, majority 3 of 5; drift = 10000 × 1 % + 2 = 102 ms"),
            "{en}"
        );
        assert!(!en.contains("Cmd {"), "no Debug output: {en}");
        let zh = show(&lesson("22"), Lang::Zh);
        assert!(
            zh.contains("选项：被接受 | 被拒绝") && zh.contains("答案：被拒绝"),
            "{zh}"
        );
        assert!(zh.contains("第 22 课"), "{zh}");
    }

    /// `--quiz` shows the choices in the seed's order (core's
    /// `choice_order`, as the page), numbers them as shown, and judges the
    /// number by what it shows; another seed, another order.
    #[test]
    fn quiz_mode_shuffles_the_choices_by_its_seed() {
        let l = lesson("17");
        let (i, q) = (l.steps.iter().enumerate())
            .find_map(|(i, s)| s.quiz.as_ref().filter(|q| q.choices.len() >= 4).map(|q| (i, q)))
            .expect("a question with four choices");
        let shown = |seed: u64| {
            let mut out = Vec::new();
            let mut input = std::io::Cursor::new("x\n".repeat(40));
            quiz(&l, Lang::En, seed, &mut input, &mut out).unwrap();
            let text = String::from_utf8(out).unwrap();
            let at = text.find(q.en.trim()).expect("asked");
            let lines: Vec<String> = text[at..]
                .lines()
                .skip(1)
                .take(q.choices.len())
                .map(str::to_owned)
                .collect();
            (lines, text)
        };
        let orders: Vec<Vec<usize>> = (1..=6).map(|seed| q.choice_order(seed, i)).collect();
        for seed in 1..=6u64 {
            let (lines, text) = shown(seed);
            let want: Vec<String> = (orders[seed as usize - 1].iter().enumerate())
                .map(|(n, &c)| format!("  {}. {}", n + 1, q.choices[c]))
                .collect();
            assert_eq!(lines, want, "seed {seed}: {text}");
            assert!(
                text.contains(&format!("--seed {seed} asks in this order again")),
                "{text}"
            );
        }
        assert!(
            orders.iter().any(|o| *o != orders[0]),
            "six seeds, one order: {orders:?}"
        );
        // The judge reads the slot shown.
        let step = &l.steps[i];
        let right = render::quiz_answer(step, q, Lang::En);
        let at = q.choices.iter().position(|c| *c == right).unwrap();
        for order in &orders {
            let slot = order.iter().position(|&c| c == at).unwrap() + 1;
            assert!(is_right(step, q, order, &slot.to_string()));
            let other = slot % q.choices.len() + 1;
            assert!(!is_right(step, q, order, &other.to_string()));
        }
    }

    /// `lesson show 35` prints the timed answer's question and rubric.
    #[test]
    fn show_prints_the_timed_answer() {
        let l = lesson("35");
        let t = l.timed.as_ref().expect("timed");
        let en = show(&l, Lang::En);
        assert!(
            en.contains(&format!("⏲ timed answer ({} s): {}", t.seconds, t.question.en.trim())),
            "{en}"
        );
        for (n, p) in t.rubric.iter().enumerate() {
            assert!(en.contains(&format!("{:>2}. {}", n + 1, p.en.trim())), "{en}");
        }
        let zh = show(&l, Lang::Zh);
        assert!(
            zh.contains(&format!("评分要点：\n   1. {}", t.rubric[0].zh.trim())),
            "{zh}"
        );
        assert!(!show(&lesson("17"), Lang::En).contains("⏲"), "only lessons with one");
    }

    /// `lesson run ID --quiz` asks, checks (by number or text) and scores.
    #[test]
    fn quiz_mode_asks_and_scores() {
        let l = lesson("22");
        let asked = l
            .steps
            .iter()
            .filter(|s| s.quiz.is_some() || (s.cmd.is_some() && s.expect.is_some()))
            .count();
        // Everything right: replies typed as redis-cli prints them, the
        // fencing question answered by its choice number (2 = rejected).
        // The number is the slot shown, in seed 7's order.
        let answers: Vec<String> = (l.steps.iter().enumerate())
            .filter(|(_, s)| s.quiz.is_some() || (s.cmd.is_some() && s.expect.is_some()))
            .map(|(i, s)| match &s.quiz {
                Some(q) if !q.choices.is_empty() => {
                    let right = render::quiz_answer(s, q, Lang::En);
                    let at = q.choices.iter().position(|c| *c == right).unwrap();
                    (q.choice_order(7, i).iter().position(|&c| c == at).unwrap() + 1).to_string()
                }
                _ => s.expect.as_ref().unwrap().describe(),
            })
            .collect();
        let mut input = std::io::Cursor::new(answers.join("\n") + "\n");
        let mut out = Vec::new();
        let (right, n) = quiz(&l, Lang::En, 7, &mut input, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!((right as usize, n as usize), (asked, asked), "{text}");
        assert!(text.contains("score: ") && text.contains("outcome: "), "{text}");
        // Everything wrong, in Chinese.
        let mut input = std::io::Cursor::new("x\n".repeat(asked));
        let mut out = Vec::new();
        let (right, _) = quiz(&l, Lang::Zh, 7, &mut input, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(right, 0, "{text}");
        assert!(
            text.contains("✗ 答案是：被拒绝") && text.contains("得分：0 /"),
            "{text}"
        );
    }

    /// `lesson run 46 --quiz`: each exercise reads a line, or a script
    /// ended by `.`, and prints the lab's verdict: a bare DEL fails with its
    /// counterexample, the compare-and-delete script passes with its bounds.
    #[test]
    fn quiz_grades_written_fixes() {
        let l = lesson("46");
        let exercises = l.steps.iter().filter(|s| s.exercise.is_some()).count();
        assert!(exercises >= 4);
        let script = "if redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n  return redis.call(\"DEL\", KEYS[1])\nend\nreturn 0\n.\n";
        // 1: the atomic SET; 2: a bare DEL; 3: GET then DEL, as two lines; 4: the script.
        let input = format!("SET $key $token NX PX $ttl\nDEL $key\n\nGET $key\nDEL $key\n.\n{script}");
        let mut out = Vec::new();
        let (right, asked) = quiz(&l, Lang::En, 7, &mut std::io::Cursor::new(input), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!((right, asked), (2, exercises as u32), "{text}");
        assert!(text.contains("✗ not safe yet"), "{text}");
        assert!(text.contains("breaks wrong-release in"), "{text}");
        assert!(text.contains("✓ passed"), "{text}");
        assert!(
            text.contains("what the bounded-exhaustive search checked: held: every schedule"),
            "{text}"
        );
        // An empty answer is a verdict, not a crash; in Chinese.
        let mut out = Vec::new();
        let (right, _) = quiz(
            &l,
            Lang::Zh,
            7,
            &mut std::io::Cursor::new("\n.\n".repeat(exercises)),
            &mut out,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(right, 0, "{text}");
        assert!(text.contains("✗ 无法评判：the answer is empty"), "{text}");
    }

    /// `lesson run 18 --quiz`: the Redlock validity check is one line, a
    /// condition; redis.io's rule passes, the rule without the elapsed time
    /// gets the paused acquirer's stale write as its counterexample.
    #[test]
    fn quiz_grades_a_redlock_validity_check() {
        let l = lesson("18");
        let feed = |rule: &str| {
            let mut input = String::new();
            for s in &l.steps {
                if s.exercise.is_some() {
                    input.push_str(rule);
                    input.push('\n');
                }
                if step_question(s, Lang::En).is_some() {
                    input.push_str("x\n");
                }
            }
            let mut out = Vec::new();
            quiz(&l, Lang::En, 7, &mut std::io::Cursor::new(input), &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let text = feed("oks >= n / 2 + 1 and ttl - elapsed - drift > 0");
        assert!(text.contains("✎ Write Redlock's decision"), "{text}");
        assert!(text.contains("✓ passed"), "{text}");
        let text = feed("oks >= n / 2 + 1");
        assert!(text.contains("✗ not safe yet"), "{text}");
        assert!(text.contains("breaks stale-write"), "{text}");
        assert!(text.contains("by the written rule: true"), "{text}");
        let text = feed("validity > 0");
        assert!(
            text.contains("cannot grade it: the validity check: unknown name"),
            "{text}"
        );
    }
}
