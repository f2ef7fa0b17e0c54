package httpapi

import "slices"

// messages are the people-facing texts per reason code, for every
// endpoint of the box and the domain: Japanese by default, English with
// Accept-Language: en. Clients branch on the code.
var messages = map[string][2]string{
	"INVALID_IDEMPOTENCY_KEY":   {"注文キーが正しくありません。画面を開き直してください。", "The order key is missing or invalid. Please reopen the cart."},
	"INVALID_CLIENT_ID":         {"端末IDが正しくありません。ページを再読み込みしてください。", "The device id is missing or invalid. Please reload the page."},
	"INVALID_ORDER":             {"注文内容が正しくありません。", "The order is not valid."},
	"SESSION_NOT_FOUND":         {"テーブルのセッションが見つかりません。", "This table session does not exist."},
	"INVALID_PIN":               {"PINが違います。", "Wrong PIN."},
	"PIN_LOCKED":                {"PINの入力に続けて失敗したため、しばらくお待ちください。", "Too many wrong PINs. Please wait a while."},
	"SESSION_CLOSED":            {"このテーブルのご利用は終了しました。", "This table session is closed."},
	"CATALOG_NOT_READY":         {"メニューを準備中です。少々お待ちください。", "The menu is not ready yet. Please wait a moment."},
	"IDEMPOTENCY_KEY_REUSED":    {"同じ注文キーで別の内容が送られました。カートを開き直してください。", "This order key was already used for a different cart. Please reopen the cart."},
	"DUPLICATE_IDEMPOTENCY_KEY": {"同じ注文を処理しています…", "This order is being processed…"},
	"COOLDOWN_ACTIVE":           {"ご注文ありがとうございます。次のご注文は少しお待ちください。", "Thank you for your order. Please wait a moment before ordering again."},
	"SESSION_BUSY":              {"お会計中のため、ただいま注文できません。", "Checkout is in progress; ordering is paused."},
	"SESSION_ORDER_IN_PROGRESS": {"このテーブルの別の注文を処理中です。少々お待ちください。", "Another order from this table is being processed. Please wait a moment."},
	"DUPLICATE_PAYLOAD":         {"同じ注文を処理しています…", "The same order is being processed…"},
	"PRICE_MISMATCH":            {"価格が変更されました。メニューを確認してください。", "Prices have changed. Please check the menu."},
	"OUT_OF_STOCK":              {"売り切れの商品があります。", "Some items are sold out."},
	"NO_QUORUM":                 {"店舗サーバーが一時的に応答できません。少し待ってからもう一度お試しください。", "The store servers cannot commit right now. Please try again shortly."},
	"UNAUTHORIZED":              {"ログインが必要です。", "Login required."},
	"FORBIDDEN_ROLE":            {"この操作は店長ログインが必要です。", "This needs a manager login; a kitchen login cannot do it."},
	"CSRF_TOKEN_INVALID": {"リクエストを確認できませんでした。ページを再読み込みしてからもう一度お試しください。",
		"The request could not be verified (missing or wrong CSRF token). Reload the page and try again."},
	"INVALID_PASSWORD":    {"パスワードが違います。", "Wrong password."},
	"LOGIN_LOCKED":        {"ログインの失敗が続いたため、しばらくお待ちください。", "Too many failed logins. Please wait a while."},
	"INVALID_MENU_ITEM":   {"メニュー項目の内容が正しくありません。", "The menu item is not valid."},
	"INVALID_IMAGE":       {"写真を受け付けられません（JPEG・PNG・WebP、256 KB まで）。", "The picture cannot be used (JPEG, PNG or WebP, 256 KB at most)."},
	"INVALID_STOCK":       {"在庫数が正しくありません。", "The stock quantity is not valid."},
	"INVALID_TABLE":       {"テーブルIDが正しくありません。", "The table id is not valid."},
	"INVALID_ID":          {"IDが正しくありません。", "The id is not valid."},
	"INVALID_STATUS":      {"ステータスが正しくありません。", "The status is not valid."},
	"INVALID_TRANSITION":  {"この注文はそのステータスに変更できません。", "The order cannot move to that status."},
	"INVALID_LIMIT":       {"limit が正しくありません。", "The limit is not valid."},
	"INVALID_REQUEST":     {"リクエストが正しくありません。", "The request is not valid."},
	"INVALID_KEY":         {"キーが正しくありません。", "The key is not valid."},
	"INVALID_QR_TEXT":     {"QRコードにする文字列は1〜512文字で指定してください。", "The QR text must be 1 to 512 characters."},
	"ORDER_NOT_FOUND":     {"注文が見つかりません。", "Order not found."},
	"MENU_ITEM_NOT_FOUND": {"メニュー項目が見つかりません。", "Menu item not found."},
	"SKU_NOT_FOUND":       {"在庫の対象が見つかりません。", "No menu item or topping has this sku."},
	"LOCK_NOT_FOUND":      {"ロックが見つかりません。", "No such live key."},
	"PRINTER_NOT_FOUND":   {"プリンターが見つかりません。", "Printer not found."},
	"SESSION_EXISTS":      {"セッションは既に存在します。", "The session already exists."},
	"MALFORMED_COMMAND":   {"内部コマンドが正しくありません。", "Malformed command."},
	"BODY_TOO_LARGE":      {"リクエストが大きすぎます。", "Request body too large."},
	"CALL_TOO_SOON":       {"先ほどお呼び出しを承りました。少々お待ちください。", "We just received your call. Please wait a moment."},
	"CALL_NOT_FOUND":      {"呼び出しが見つかりません。", "Call not found."},
	"SESSIONS_OPEN":       {"お会計の済んでいないテーブルがあります。", "Some tables have not been checked out yet."},
	// The box's own answers (node).
	"FEATURE_NOT_READY": {"この操作は、すべての端末が新しいバージョンになると使えます。更新が終わってから、もう一度お試しください。", "This works once every box runs the new version. Please try again when the update has finished."},
	"NODE_HALTED":       {"この端末は停止しています。別の端末をお使いください。", "This box has stopped serving writes. Please use another one."},
	"DISK_FULL": {"この端末の記憶領域（メモリーカード）がいっぱいのため、注文を受け付けられません。少し待ってからもう一度お試しください。",
		"This box's storage (memory card) is full, so it cannot take orders. Please try again shortly."},
	"DISK_LOW": {"この端末の記憶領域（メモリーカード）の空きが少ないため、バックアップを作れません。",
		"This box's storage (memory card) is nearly full, so it cannot make a backup now."},
	"DISK_READONLY": {"この端末のメモリーカードが書き込みできなくなっています。ほかの端末で注文を続けられます。",
		"This box's memory card refuses writes. Orders continue on the other boxes."},
	// Backups from the console (node/http_backups.go) and the wizard's restore (setup/restore.go).
	"BACKUP_BUSY": {"バックアップを作っています。終わるまでお待ちください。", "A backup is being made. Please wait until it is done."},
	"BACKUP_FAILED": {"バックアップを作れませんでした。少し待ってからもう一度お試しください。くり返すときは「端末」のページを確かめてください。",
		"The backup could not be made. Please try again shortly; if it fails again, see the Boxes page."},
	"BACKUP_NOT_FOUND": {"このバックアップはもう端末にありません。「バックアップを作る」をもう一度押してください。",
		"This backup is no longer on the box. Press “Make a backup” again."},
	"BACKUP_INVALID": {"このファイルはお店のバックアップとして読めません。スタッフ画面の「バックアップ」で保存したファイル（.mosnap）を選んでください。",
		"This file cannot be read as a store backup. Choose a file saved from the console’s Backups page (.mosnap)."},
	"BACKUP_TOO_LARGE": {"このファイルは大きすぎて、この端末のカードに入りません。",
		"This file is too large for this box's memory card."},
	"RESTORE_NEEDS_BACKUP": {"先にバックアップのファイルを選んで送ってください。", "Choose and send the backup file first."},
	"RESTORE_FAILED": {"バックアップをこの端末に戻せませんでした。カードを書き直した端末で、もう一度お試しください。",
		"The backup could not be restored onto this box. Write its card again and retry."},
	"INTERNAL":           {"内部エラーが発生しました。", "Internal error."},
	"NOT_FOUND":          {"見つかりません。", "Not found."},
	"METHOD_NOT_ALLOWED": {"このメソッドは使えません。", "Method not allowed."},
	"BAD_REQUEST":        {"リクエストが正しくありません。", "Bad request."},
	"HTTPS_REQUIRED": {"スタッフ・キッチンの画面と操作は HTTPS でのみ利用できます。https:// のアドレスを開いてください。",
		"Staff and kitchen pages and calls are served over HTTPS only. Open the https:// address."},
	// Membership changes (node/membership.go); the refusal's detail follows.
	"INVALID_MEMBER":    {"メンバーの指定が正しくありません。", ""},
	"MEMBER_NOT_FOUND":  {"そのメンバーはクラスタにいません。", ""},
	"MEMBER_EXISTS":     {"そのメンバーは別の設定ですでにクラスタにいます。", ""},
	"ADDRESS_IN_USE":    {"そのアドレスは別のメンバーが使っています。", ""},
	"LAST_VOTER":        {"最後の投票メンバーは外せません。", ""},
	"WOULD_LOSE_QUORUM": {"外すと過半数の端末が応答しなくなり、注文を受けられなくなります。", ""},
	"MEMBER_BUILD_OLD": {"その端末のソフトウェアはお店のほかの端末より古いため、投票メンバーにできません。端末を更新してから、もう一度お試しください。",
		"That box runs an older version than the rest of the store, so it cannot become a voter. Update it, then try again."},
	// Setup mode (package setup): claiming a box and the wizard.
	"TLS_REQUIRED":        {"この操作は暗号化された接続（TLS）でのみ受け付けます。", "This call is accepted over TLS only."},
	"NOT_IN_SETUP":        {"この端末はすでにお店の一員です。セットアップには使えません。", "This box is already part of a store; it cannot be set up again without a factory reset."},
	"ALREADY_CLAIMED":     {"この端末はすでに別のセットアップに使われています。", "This box was already claimed by another setup."},
	"CLAIM_WINDOW_CLOSED": {"電源を入れてから時間が経ったため、受け付けを終了しました。端末の電源を入れ直してください。", "The setup window after power-on has closed. Turn the box off and on again."},
	"SETUP_CODE_REQUIRED": {"セットアップコードが必要です。カードの masterorder-setup.txt に書いたコードを入力してください。", "This box needs its setup code (the one in masterorder-setup.txt on its card)."},
	"SETUP_CODE_WRONG":    {"セットアップコードが違います。", "Wrong setup code."},
	"SETUP_LOCKED":        {"セットアップコードの誤りが続いたため、受け付けを止めました。端末の電源を入れ直してください。", "Too many wrong setup codes. Turn the box off and on again."},
	"CLAIM_TOKEN_WRONG":   {"この端末を確保したセットアップではありません。", "This setup did not claim this box."},
	"INVALID_SETUP":       {"セットアップの内容が正しくありません。このページを読み込み直して、もう一度お試しください。", "The setup request is not valid: reload this page and try again."},
	"INVALID_GUEST_NAME": {"「お客様用のアドレス名」は「.local」で終わる名前にしてください（例: masterorder.local）。使えるのは英小文字・数字・ハイフンです。空欄なら masterorder.local になります。",
		"Address name for guests: use a name that ends in “.local” (for example masterorder.local), with lower-case letters, digits and hyphens; leave it empty for masterorder.local."},
	"INVALID_SHOP_NAME": {"「お店の名前」を入れてください（100文字まで、1行で）。", "Shop name: type the shop's name (up to 100 characters, on one line)."},
	"INVALID_TAX_RATE":  {"「消費税率（%）」は0から100までの数にしてください。", "Tax rate (%): type a number from 0 to 100."},
	// The wizard's and the console's time zone (orders/timezone.go).
	"INVALID_TIME_ZONE": {"「タイムゾーン」は一覧から選んでください（日本なら Asia/Tokyo）。", "Time zone: choose one from the list (in Japan, Asia/Tokyo)."},
	"WEAK_PASSWORD":     {"パスワードが推測されやすいです。10文字以上で、よくある言葉や連番を避けてください。", "The password is too easy to guess: use at least 10 characters, not a common word or a run."},
	"SAME_PASSWORDS":    {"キッチン用と店長用のパスワードは別にしてください。", "The kitchen password must differ from the manager password."},
	"PLAIN_PASSWORD":    {"パスワードはそのまま送れません。このページを読み込み直してください。", "A password is never sent as it is (only its bcrypt hash): reload this page."},
	"BAD_PASSWORD_HASH": {"パスワードを処理できませんでした。このページを読み込み直して、もう一度お試しください。", "The password hash is not a bcrypt hash of cost 10 to 12: reload this page and try again."},
	"BOX_NOT_FOUND":     {"その端末が見つかりません。電源とネットワークを確かめてください。", "That box was not found. Check its power and network."},
	"SETUP_BUSY":        {"セットアップはすでに進行中です。", "A setup is already in progress."},
	"CARD_WRITE_FAILED": {"この端末のメモリーカードに書き込めませんでした。カードを差し直すか、別の端末を使ってください。",
		"This box could not write its memory card. Reseat the card, or use another box."},
	"NO_CA_KEY": {"この端末には、端末を加えるための鍵（ca-key.pem）がありません（masterorder init で作ったお店）。tls/ca-key.pem のあるパソコンで init --add-node を使うか、その鍵をこの端末の /etc/masterorder/tls/ に置いてください。",
		"This box holds no key to admit boxes (ca-key.pem): the shop was made with masterorder init. Add the box with init --add-node on the computer that holds tls/ca-key.pem, or copy that key to /etc/masterorder/tls/ on this box."},
	"UNREACHABLE":          {"端末に届きませんでした。電源と LAN ケーブルを確かめてください。", "The box could not be reached. Check its power and network cable."},
	"FINGERPRINT_MISMATCH": {"別の機器がこの端末のアドレスで応答しました。端末をもう一度探してください。", "Another device answered at this box's address. Look for the boxes again."},
	"TIMEOUT":              {"新しい端末が時間内に準備できませんでした。電源とネットワークを確かめて、もう一度お試しください。", "The new box did not get ready in time. Check its power and network, then try again."},
	// Updating the store (package update); the specifics follow the text.
	"BUNDLE_UNSIGNED":             {"このファイルには署名がありません。MasterOrder の正式な更新ファイル（.raucb）を選んでください。", "This file is not signed. Choose an official MasterOrder update file (.raucb)."},
	"BUNDLE_WRONG_KEY":            {"このファイルは MasterOrder の正式な鍵で署名されていません。入れられません。", "This file is not signed with MasterOrder's release key. It cannot be installed."},
	"BUNDLE_CORRUPT":              {"更新ファイルが壊れているか、途中までしかありません。もう一度ダウンロードしてください。", "The update file is damaged or incomplete. Download it again."},
	"BUNDLE_WRONG_BOARD":          {"この更新ファイルは別の機種用です。この店の端末用のファイルを選んでください。", "This update file is for another kind of box. Choose the file for this store's boxes."},
	"BUNDLE_DOWNGRADE":            {"このファイルは今より古いバージョンです。古いバージョンに戻す場合は、確認してからもう一度お試しください。", "This file is an older version than the boxes run. To go back to it, confirm the downgrade and try again."},
	"BUNDLE_TOO_LARGE":            {"更新ファイルが大きすぎます。", "The update file is too large."},
	"UPDATE_ALREADY_CURRENT":      {"端末はすでにこのバージョンです。", "The boxes already run this version."},
	"UPDATE_ROLLED_BACK":          {"新しいバージョンが端末で正しく起動しなかったため、その端末は自動で元のバージョンに戻りました。更新は止めました。お店はそのまま使えます。", "The new version did not start properly on a box, so that box went back to its old version by itself. The update was stopped; the store keeps working."},
	"UPDATE_INSTALL_FAILED":       {"端末に更新を書き込めませんでした。端末は元のバージョンのままです。更新は止めました。", "The update could not be written on a box; it still runs its old version. The update was stopped."},
	"UPDATE_BOX_TIMEOUT":          {"更新した端末が時間内に戻りませんでした。更新は止めました。端末の電源とネットワークを確かめてください。", "An updated box did not come back in time. The update was stopped. Check that box's power and network."},
	"UPDATE_BOX_DOWN":             {"応答しない端末があるため、更新を始められません。すべての端末が動いているときにもう一度お試しください。", "A box is not answering, so the update cannot start. Try again when every box is running."},
	"UPDATE_NO_ROOM":              {"端末のメモリーカードに更新ファイルを置く空きがありません。「端末」ページのカードの案内を先に確かめてください。", "This box's memory card has no room for the update file. Check the card advice on the Boxes page first."},
	"UPDATE_BUSY":                 {"更新はすでに進行中です。", "An update is already under way."},
	"UPDATE_NO_BUNDLE":            {"入れる更新がまだありません。新しいバージョンを探すか、更新ファイルを選んでください。", "There is no update to install yet. Look for a new version or choose an update file."},
	"UPDATE_NO_RELEASE_INDEX":     {"この店ではインターネットからの更新が設定されていません。更新ファイルを選んでください。", "Updates from the internet are not set up for this store. Choose an update file instead."},
	"UPDATE_RELEASE_INDEX_FAILED": {"新しいバージョンの情報を取得できませんでした。インターネットにつながっているか確かめてください。", "The list of new versions could not be read. Check the store's internet connection."},
	// The console's clock prompt (orders/clock.go).
	"CLOCK_BEHIND": {"このタブレットの時計が、端末の時計より前になっています。時計は戻せません。タブレットの日付と時刻を確かめてから、もう一度押してください。",
		"This tablet's clock is earlier than the boxes' clock, and a clock is never put back. Check the tablet's date and time, then tap again."},
	"CLOCK_IMPLAUSIBLE": {"このタブレットの日付がおかしいようです。タブレットの日付と時刻を確かめてから、もう一度押してください。",
		"This tablet's date looks wrong. Check the tablet's date and time, then tap again."},
	// The Cloud page (orders/http_cloud.go); the specifics follow the text.
	"CLOUD_KEY_NOT_JSON": {"このファイルはサービスアカウントの鍵ではありません（JSON ファイルではありません）。Firebase コンソールの［プロジェクトの設定］→［サービス アカウント］→［新しい秘密鍵を生成］でダウンロードしたファイルを選んでください。",
		"This file is not a service-account key (it is not a JSON file). Choose the file that Firebase console → Project settings → Service accounts → Generate new private key downloads."},
	"CLOUD_KEY_NOT_SERVICE_ACCOUNT": {"このファイルはサービスアカウントの鍵ではありません（google-services.json などの別の JSON ファイルです）。Firebase コンソールの［プロジェクトの設定］→［サービス アカウント］→［新しい秘密鍵を生成］でダウンロードしたファイルを選んでください。",
		"This file is not a service-account key (it is another kind of JSON file, such as google-services.json). Choose the file that Firebase console → Project settings → Service accounts → Generate new private key downloads."},
	"CLOUD_KEY_INCOMPLETE": {"鍵ファイルの中身が足りないか、壊れています。Firebase コンソールで新しい秘密鍵をもう一度ダウンロードしてください。",
		"The key file is incomplete or damaged. Download a new private key from the Firebase console again."},
	"CLOUD_KEY_NO_ACCESS": {"この鍵では Firestore に書き込めません（権限がありません）。Firebase コンソールの［サービス アカウント］で作った鍵を使うか、Google Cloud コンソールの IAM でこのサービスアカウントに「Cloud Datastore ユーザー」の役割を付けてください。",
		"This key may not write to Firestore (no permission). Use a key made under Firebase console → Service accounts, or give this service account the \"Cloud Datastore User\" role in the Google Cloud console's IAM page."},
	"CLOUD_NO_DATABASE": {"この Firebase プロジェクトには Firestore のデータベースがまだありません。Firebase コンソールの［Firestore Database］→［データベースを作成］を済ませてから、もう一度お試しください。",
		"This Firebase project has no Firestore database yet. Create one in Firebase console → Firestore Database → Create database, then try again."},
	"CLOUD_CHECK_FAILED": {"Firestore が試しの書き込みを受け付けませんでした。鍵は保存していません。", "Firestore refused the test write. The key was not saved."},
	"CLOUD_SET_IN_FILE": {"クラウド同期はこの端末の設定ファイル（masterorder.toml の [firestore]）で設定されています。変更は設定ファイルで行ってください。",
		"Cloud sync is set in this box's configuration file (masterorder.toml, [firestore]). Change it there."},
}

// Codes are every reason code of the table, sorted: the enum ReasonCode
// of api/openapi.yaml is the same set (a test in api keeps them equal).
func Codes() []string {
	out := make([]string, 0, len(messages))
	for code := range messages {
		out = append(out, code)
	}
	slices.Sort(out)
	return out
}

// Message returns the text for a reason code.
func Message(code string, english bool) string {
	m, ok := messages[code]
	if !ok || (english && m[1] == "") {
		if english {
			return "The request was refused (" + code + ")."
		}
		return "リクエストを処理できませんでした（" + code + "）。"
	}
	if english {
		return m[1]
	}
	return m[0]
}
