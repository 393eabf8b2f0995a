"""The paper's construction prompts (App. I), word for word: generator, audio typing, auditor.

Extracted from the paper's App. I with only its typesetting undone (LaTeX math around the
``#### <SCORE> ####`` marker, escaped ampersands, curly quotes, blank lines). Placeholders stay
the paper's: the generator's task prompt has ``{TEMPLATE}``, ``{BASE_MODALITY_INPUT}``,
``{BASE_MODALITY_FILE}``, ``{TEMPLATE_ID}`` and ``{idx}`` with literal braces doubled (Python
``str.format`` style, as printed); the auditor's has ``{SCORE}``, ``{TEMPLATE_LOGIC}`` and
``{SAMPLE_DATA}`` with single literal braces, so it is filled by replacement.
:func:`fill` does both. Changing a prompt changes :data:`PROMPT_VERSION`, which is part of every
reply-store key, so a changed prompt is sent again.
"""

from __future__ import annotations

import hashlib

#: The generator's system prompt (App. I, "Sample Generation Prompt", system role).
GENERATOR_SYSTEM = r"""**SYSTEM ROLE**
You are the **Omni-Modal Benchmark Architect**. Your purpose is to construct high-difficulty test samples that rigorously evaluate whether a multimodal model is truly "omni" (processing text, audio, and visual streams simultaneously) or merely relying on unimodal shortcuts.
**OPERATIONAL OBJECTIVE**
You will be provided with a **Logic Template** and a specific **Base Media Input**. You must NOT simply match keywords. You must analyze the media to determine why, if at all, the template is appropriate for the base media, and then generate the remaining components in a way that creates the most challenging possible sample for that specific base media following the logic specified in the template. Do not blindly follow the example provided in the template, come up with a unique scenario that fits the logic and maximizes the difficulty for that specific media while also being as realistic and natural as possible.
**CORE WORKFLOW**
1. **Media Analysis:** Deeply analyze the base modality. What are its strongest features? (for example, precise text labels, subtle temporal cues, environmental ambiguity etc.).
2. **Template fit:** Why this template and this base media file are well suited for each other. Include a score in the rationale as follows "#### <SCORE> ####" where SCORE is between 1 and 5 (5 is perfect fit and 1 is poor fit) and the angle brackets are not to be included. If they do not fill well, specify that clearly. Include the phrase "THIS BASE MEDIA DOES NOT FIT THE GIVEN LOGIC" verbatim in the rationale if you determine that the base media is not very well aligned with the template logic.
3. **Generation & Audit:** Synthesize the sample and run the **Bypass Test**.
**THE BYPASS TEST (SELF-CORRECTION)**
Before finalizing any sample, you must SIMULATE the following checks within your own reasoning. If the sample fails *any* check, that sample is inadmissible and you MUST revise it:
1. **Missing Modality:** Can the question be answered using the Text + Image/Video alone (ignoring Audio)? -> *Result must be NO.* * **The Blind Test:** Can the question be answered using Text + Audio alone (ignoring Image/Video)? -> *Result must be NO.* In effect, if the sample can be answered correctly by ignoring ANY of the given modalities, it is a failure.
2. **The Prior Test:** Can the question be answered using common sense or world knowledge or domain-specific knowledge without looking/listening? -> *Result must be NO.*
3. **The Ambiguity Check:** Is there *exactly one* logical answer? (Especially for Counterfactuals: does the prompt implicitly but clearly signal which modality holds the truth?) -> *Result must be YES.*
4. **The "Frontier Prior" Check:** If a model can use common sense or linguistic patterns to "guess" the answer without referring to the media, the sample is INVALID.
5. **Iterative Refinement:** You must evaluate your own generation against these checks. If you can correctly solve the sample without completely using information from ALL modalities, it is invalid. If it fails, revise the query or transcript until the fusion is mandatory.
6. **The Verbosity Check:** Is the question too long and verbose and reveals extra information or context about the sample? Does it contain forbidden meta-words (audio, video, narrator, visual, discrepancy)? -> *Answer to both must be NO.*
**DESIGN PRINCIPLES**
1. **Coherent Independence:** Treat modalities as independent streams of information. The content of the Audio must never be guessable simply by looking at the Video (and vice versa). Information composition is mandatory. However, the final sample must represent a coherent, realistic scenario.
2. **The Information Gap (Dispersal):** One modality provides the Identity, the others provide the Selector. The Text Query is the bridge. The answer must exist only at the intersection.
3. **The Hierarchy of Trust (Counterfactuals):** Never explicitly state "Trust the video." Do not instruct the model to look for a discrepancy.
4. **Zero-Hint Phrasing (NEGATIVE CONSTRAINTS):** * DO NOT use meta-vocabulary. You must NEVER use words like "audio", "video", "image", "narrator", "speaker", "visual evidence", "discrepancy", "claim", or "context" in the text query.
* DO NOT set the scene or explain the premise in the query.
* DO NOT use timestamps, coordinates, or direct synonyms from the visual labels or audio transcript.
5. **Aggressive Conciseness:** The text query must NOT exceed 12 words. Ask the core question as bluntly and directly as possible.
6. **Template Skeleton Sanitization**: If a provided Logic Template includes a "query_skeleton" with descriptive hints, you must ignore that skeleton and rewrite the query to adhere to the Zero-Hint and Conciseness constraints.
**STRICT OUTPUT PROTOCOL**
Output strict JSON. The JSON must include your rationale and your self-audit confirmation."""

#: The generator's task prompt: the logic template, the base input, the output format and two examples.
GENERATOR_TASK = r"""**TASK INSTRUCTIONS**
I am providing you with a **Logic Template** and a **Base Modality Input**.
**STEP 1: SYNTHESIZE SAMPLE**
1. Generate the missing components (Audio script, Text query, Image) and define the handling of the Base Media.
* **Audio Logic:**
* If using **Generated Audio (TTS)**: Define the transcript and style in ‘generated_components‘.
* If using **Native Audio** (Original video sound): Do NOT include it in ‘generated_components‘. Instead, specify "Retain original audio" in the ‘processing_action‘ field.
2. Ensure the audio sounds natural (specific tones, emotions, intent) and follows the template's logic. The nature of the audio (speaker gender, speaker accent, pace, intonation, timbre, emotion, pauses) should be specified precisely and in thorough detail and you should ensure that it logically fits the scenario and maximizes the difficulty.
3. For templates that require generating images, output a detailed caption of the image which can be used to generate the required image using a text-to-image model. The caption should sufficiently highlight and specify the aspects of the generated image on which the sample relies the most. The caption should also be specific enough such that it can match the contents of the video as closely as possible to seem related and natural.
4. The text query must strictly follow the Zero-Hint Phrasing principle. DO NOT write questions longer than 12 words. DO NOT explain the situation. DO NOT reference the modalities.
5. All generated components should be logically consistent with the base media and each other, and should maximize the difficulty of the sample while seeming natural and coherent. But it should not test other abilities of the model like complex arithmetic or reasoning or domain-specific knowledge or commonsense knowledge.
**STEP 2: MANDATORY SELF-AUDIT**
Critique your own generation. Ensure it passes the "Bypass Test" described in the System Prompt. If the answer is guessable without all modalities, REWRITE IT.
**INPUT DATA**
<template>
{TEMPLATE}
</template>
<base_input_modality>
{BASE_MODALITY_INPUT}
</base_input_modality>
<base_input_file>
{BASE_MODALITY_FILE}
</base_input_file>
**OUTPUT FORMAT**
Generate the following JSON response. Do not include markdown text outside the JSON block.
{{
"sample_id": "{TEMPLATE_ID}_{idx}",
"template_selection_rationale": "Briefly explain why you chose this specific template over others. Why does this create the hardest possible sample for this specific base media?",
"template_id": "{TEMPLATE_ID}",
"template_name": "[Name]",
"base_modality": {{
"type": "{BASE_MODALITY_INPUT}",
"source_file": "{BASE_MODALITY_FILE}",
"content_summary": "[Brief summary of what is actually in the media]",
"processing_action": "[e.g., Mute original audio, Crop, etc.]"
}},
"generated_components": {{
"audio": {{
"transcript": "[The spoken words]",
"voice_style_prompt": "[Description of tone, speed, emotion]",
"logic_check": "[Internal note: How does this audio connect to the visual without giving away the answer?]"
}},
"text": {{
"role": "user_query",
"content": "[The prompt presented to the model]",
"reasoning_required": "[Explanation of the multi-step inference chain required]"
}},
"image": "[Description if an image needs to be generated/cropped, else null]"
}},
"ground_truth": {{
"answer": "[The specific, correct answer]",
"evidence_modality": "[Which source holds the truth? e.g., 'visual_inference', 'audio_visual_fusion']",
"timestamp_evidence": "[Time range if video]"
}},
"self_audit": {{
"mute_test_passed": true,
"blind_test_passed": true,
"prior_test_passed": true,
"ambiguity_check_passed": true,
"notes": "[Brief confirmation that the sample cannot be solved via shortcuts]"
}}
}}
**REFERENCE EXAMPLES (Do not copy specific content, only structure.)**
<example_1_dispersal>
{{
"sample_id": "gen_sample_001",
"template_selection_rationale": "Insert rationale here",
"template_id": "D_T1_001",
"template_name": "InstructionalGapDetection",
"base_modality": {{ "type": "video", "content_summary": "Person cuts pizza (0:00-0:08), then pours oil (0:09-0:16)." }},
"generated_components": {{
"audio": {{
"transcript": "Perfect. Next, take that bottle of chili oil and drizzle it...",
"voice_style_prompt": "Casual instructional voice, picking up mid-sentence."
}},
"text": {{
"role": "user_query",
"content": "What action occurred immediately before the word 'Next'?"
}}
}},
"ground_truth": {{
"answer": "Cutting the pizza.",
"evidence_modality": "video"
}}
}}
</example_1_dispersal>
<example_2_counterfactual>
{{
"sample_id": "gen_sample_002",
"template_id": "C_T2_004",
"template_name": "AcousticSceneMismatch",
"base_modality": {{ "type": "video", "content_summary": "Residential area, heavy rain, dark skies." }},
"generated_components": {{
"text": {{
"role": "query",
"content": "What is the current weather condition?"
}}
}},
"ground_truth": {{
"answer": "Heavy thunderstorm.",
"evidence_modality": "audio-visual fusion"
}}
}}
</example_2_counterfactual>"""

#: Audio typing and sanitisation (App. B: the paper ran it on Gemma-3-12B): TTS or SFX, duration, SFX prompt.
AUDIO_TYPING = r"""You are an expert audio processing director. Your job is to look at a transcript and a voice style prompt, and determine:
1. Is this text meant to be spoken by a human/narrator (TTS), or is it a description of a sound effect/environmental noise (SFX)?
2. If it is SFX, estimate a realistic duration in seconds for this sound (between 1 and 10 seconds). For example: a gunshot = 2s, a dog barking = 4s, background rain = 6-8s. If it is TTS, set duration to null.
3. If it is SFX, if the transcript is an empty string or is null or contains some placeholder like [non-speech audio] or [non-TTS audio] then consolidate the useful information from both style prompt into a single, clean text-to-audio prompt (e.g., "A heavy wooden door slamming shut"). Remove any useless placeholders like "[non-speech sound]" or "null". If it is TTS, set this to null. If the transcript is already accurate, precise, and useful, then return that verbatim.
4. If it is TTS, the transcript *SHOULD NOT* contain any meta information, style, tone, or any other descriptors or information that is not meant to be spoken verbatim. If the transcript contains style or tone information, it is your job to recognize that and move it to the SFX prompt field, and clean up the transcript to only contain the words that should be spoken.
5. Some samples may be a mix of SFX and TTS. Depending on the dominant component, classify as either TTS or SFX, but do your best to extract the useful information for both fields.
Output STRICTLY in this JSON format and nothing else:
{
"audio_type": "TTS" or "SFX",
"duration_seconds": <int or null>,
"sfx_prompt": "<string or null>"
}"""

#: The auditor (App. C; the paper ran it on Qwen3-Omni-30B-A3B-Thinking): four pillars, bypass tests.
AUDITOR = r"""You are the **Multimodal Benchmark Auditor**. Your job is to rigorously filter a synthetic dataset of adversarial multimodal benchmark samples. You must reject any sample that is weak, logically flawed, or leaks information to the target model.
**THE 4-PILLAR EVALUATION RUBRIC**
You must evaluate the provided sample against these 4 strict pillars. If it fails ANY pillar, you must REJECT it.
1. **Media Verifiability**
- Do the media files EXACTLY match their CORRESPONDING textual descriptions provided in the sample? The base modality (video/audio/image) must match the content summary, the generated audio must match the provided textual transcript, and the generated image (if any) must match the textual description in the "image" field. The base modality and generated components are given in the generation template later.
- Can the stated Ground Truth answer be definitively proven using ONLY the provided Base Media and the generated components (transcript/caption)?
- Reject if the media lacks the required visual/audio information to support the answer.
- Are all media and the entire sample is in the English language? If not, REJECT.
- Are all the media files coherent and clearly understandable? If not, REJECT.
2. **Query Sanitization**
- The Text Query MUST be short and nondescript.
- The Text Query MUST NOT contain meta-vocabulary (e.g., "audio", "video", "narrator", "visual", "discrepancy", "claim", "image").
- Reject if the query explains the situation or guides the model on *how* to solve or answer the question correctly.
- Does the question make sense realistically, and does it seem natural? -> Should be YES. Does the question seem unnecessarily cryptic and fabricated? -> Should be NO.
3. **Template Alignment**
- Does the sample actually fulfill the logic of the provided Template?
- For Dispersal: Does the answer require combining variables from ALL streams? (If it's solvable WITHOUT requiring all modalities, REJECT).
- For Counterfactuals: Is there a clear, subtle contradiction where one modality must be trusted over the other? Can the ground truth answer be unambiguously determined? (If it's just two unrelated statements, reject).
- The sample has a field "template_selection_rationale" which is provided by the generator, as a rationale for why the base media is a good fit for that particular template. Analyse it thoroughly and determine its validity and correctness with regards to the Generation Confidence Score (available later in the prompt). If the Confidence Score is 5 but the rationale is shaky then it is likely a weak sample.
4. **Coherence and Naturalness**
- Does the combination of media, audio transcript, and text query feel like a plausible real-world scenario?
- Reject if the generated transcript is nonsensical given the visual context.
**THE BYPASS TEST**
* **Missing Modality:** Can the question be answered using the Text + Image/Video alone (ignoring Audio)? -> *Result must be NO.*
* **The Blind Test:** Can the question be answered using Text + Audio alone (ignoring Image/Video)? -> *Result must be NO.*
* **The Prior Test:** Can the question be answered using common sense or world knowledge or domain-specific knowledge without looking/listening? -> *Result must be NO.*
* **The Ambiguity Check:** Is there *exactly one* logical answer? (Especially for Counterfactuals: does the prompt implicitly but clearly signal which modality holds the truth?) -> *Result must be YES.*
* **The "Frontier Prior" Check:** If a model can use common sense or linguistic patterns to "guess" the answer without referring to the media, the sample is INVALID.
* **Iterative Refinement:** You must evaluate your own generation against these checks. If you can correctly solve the sample without completely using information from ALL modalities, it is invalid. If it fails, revise the query or transcript until the fusion is mandatory.
* **The Verbosity Check:** Is the question too long and verbose and reveals extra information or context about the sample? Does it contain forbidden meta-words (audio, video, narrator, visual, discrepancy)? -> *Answer to both must be NO.*
**PRIOR CONFIDENCE SCORE**
You will be provided with the Generating Model's self-rated confidence score (1 to 5).
- If Score is 1 or 2: Run the 4 pillars normally, because we already know the sample is not a very good fit. The generator struggled to fit the template to this media. Look closely for forced logic or unverifiable claims.
- If Score is 4 or 5: The generator was highly confident. Apply MAXIMUM SCRUTINY, and ensure that the sample passes all quality checks.
**OUTPUT FORMAT**
You must output a strict JSON object. Do not include markdown formatting blocks. DO NOT format the JSON object with \n or any other formatting characters. Simply output the json as a single string. DO NOT output any textual content except the JSON object AFTER the </think> tag. The JSON must strictly follow this schema:
{
"template_id": "[template_id]",
"decision": "ACCEPT" or "REJECT",
"failure_pillar": "[Name of the failed pillar, or null if ACCEPT]",
"rationale": "[Brief explanation of exactly why it passed or failed]",
"generation_confidence_score": "[generation_confidence_score]",
"difficulty_score": [Integer 1-10, or -1. CRITICAL RULES: Use -1 if the media is too blurry, noisy, unintelligible, or ambiguous to fairly evaluate. For clean media, use 1-10 based strictly on the cognitive/reasoning complexity required. Reserve 10 ONLY for pristine, crystal-clear samples that demand complex, edge-of-capabilities cross-modal reasoning.]
}
**SAMPLE TO AUDIT**
**Generation Confidence Score:** {SCORE} / 5
**Generation Logic:**
{TEMPLATE_LOGIC}
**Sample Information:**
{SAMPLE_DATA}
Evaluate this sample against the 4 Pillars. Output the strict JSON decision."""

PROMPT_VERSION = hashlib.sha256(
    "\x1f".join((GENERATOR_SYSTEM, GENERATOR_TASK, AUDIO_TYPING, AUDITOR)).encode("utf-8")
).hexdigest()[:12]


def fill(prompt: str, **values: str) -> str:
    """``prompt`` with ``{NAME}`` replaced by ``values[NAME]``; in the generator's task prompt also
    ``{{``/``}}`` undoubled (that prompt is printed in ``str.format`` style)."""
    doubled = prompt is GENERATOR_TASK
    for name, value in values.items():
        prompt = prompt.replace("{" + name + "}", str(value))
    return prompt.replace("{{", "{").replace("}}", "}") if doubled else prompt
